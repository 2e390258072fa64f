"""Peak RSS of a running npud under decompression bombs (issue 38 item 6).

Sends REQUESTS chat requests at once, each with IMAGES PNGs of 4096x4096
16-bit RGBA pixels that are all zero (a 130 KB file that decodes to 134 MB
at the decoder's depth, the most --max-image-pixels allows), to the
simulated engine's model, which sees images; then prints each answer's
status and the daemon's peak resident memory (VmHWM).

    python3 testdata/memory/image_bombs.py URL PID [REQUESTS] [IMAGES]
"""
import base64
import concurrent.futures
import json
import struct
import sys
import urllib.error
import urllib.request
import zlib


def bomb(side=4096):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(side * 8)  # filter byte, then 16-bit RGBA zeros
    raw = zlib.compressobj(9)
    data = b"".join(raw.compress(row) for _ in range(side)) + raw.flush()
    header = struct.pack(">IIBBBBB", side, side, 16, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def post(url, body):
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    url, pid = sys.argv[1], sys.argv[2]
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    images = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    png = "data:image/png;base64," + base64.b64encode(bomb()).decode()
    content = [{"type": "text", "text": "what is this?"}] + [{"type": "image_url", "image_url": {"url": png}}] * images
    body = json.dumps({"model": "sim", "max_tokens": 4, "messages": [{"role": "user", "content": content}]}).encode()
    with concurrent.futures.ThreadPoolExecutor(requests) as pool:
        statuses = list(pool.map(lambda _: post(url, body), range(requests)))
    with open(f"/proc/{pid}/status") as f:
        peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    print("statuses:", sorted(statuses))
    print(f"peak RSS: {int(peak) / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
