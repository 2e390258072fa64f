package audioin

import (
	"encoding/binary"
	"math"
)

// moovFirst puts an MP4's index (the moov box) before its media data
// (mdat), correcting the chunk offsets the index holds, when a file has
// them the other way round, as ffmpeg and many phones write M4A files.
// The external decoder reads from a pipe and cannot seek back from the
// index at the end to the audio before it ("partial file"); this is the
// "faststart" rearrangement, done in memory on the bounded upload. Files
// it does not understand are returned as they are, for the decoder to
// judge.
func moovFirst(data []byte) ([]byte, error) {
	boxes, ok := topBoxes(data)
	if !ok {
		return data, nil
	}
	moov, mdat := -1, -1
	for i, b := range boxes {
		switch {
		case b.kind == "moov" && moov < 0:
			moov = i
		case b.kind == "mdat" && mdat < 0:
			mdat = i
		}
	}
	if moov < 0 || mdat < 0 || moov < mdat {
		return data, nil
	}
	m := boxes[moov]
	index := append([]byte(nil), data[m.start:m.end]...)
	shiftFrom, shiftTo := int64(boxes[mdat].start), int64(m.start)
	delta := int64(len(index))
	if err := shiftOffsets(index[8:], shiftFrom, shiftTo, delta); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(data))
	out = append(out, data[:boxes[mdat].start]...)
	out = append(out, index...)
	out = append(out, data[boxes[mdat].start:m.start]...)
	return append(out, data[m.end:]...), nil
}

type box struct {
	kind       string
	start, end int // the whole box, header included
	header     int
}

// topBoxes lists the boxes of b, or false if they do not tile it.
func topBoxes(b []byte) ([]box, bool) {
	var out []box
	for pos := 0; pos < len(b); {
		if len(b)-pos < 8 {
			return nil, false
		}
		size, header := int64(binary.BigEndian.Uint32(b[pos:])), 8
		switch size {
		case 0: // to the end
			size = int64(len(b) - pos)
		case 1:
			if len(b)-pos < 16 {
				return nil, false
			}
			size, header = int64(min(binary.BigEndian.Uint64(b[pos+8:]), math.MaxInt64)), 16
		}
		if size < int64(header) || size > int64(len(b)-pos) {
			return nil, false
		}
		out = append(out, box{kind: string(b[pos+4 : pos+8]), start: pos, end: pos + int(size), header: header})
		pos += int(size)
	}
	return out, true
}

// shiftOffsets adds delta to every chunk offset in [from, to) found in the
// stco and co64 boxes under the container body b.
func shiftOffsets(b []byte, from, to, delta int64) error {
	boxes, ok := topBoxes(b)
	if !ok {
		return invalid("the MP4 file's index is malformed")
	}
	for _, x := range boxes {
		body := b[x.start+x.header : x.end]
		switch x.kind {
		case "trak", "mdia", "minf", "stbl":
			if err := shiftOffsets(body, from, to, delta); err != nil {
				return err
			}
		case "stco", "co64":
			width := 4
			if x.kind == "co64" {
				width = 8
			}
			if len(body) < 8 {
				return invalid("the MP4 file's %s box is cut", x.kind)
			}
			n := int(binary.BigEndian.Uint32(body[4:]))
			if n > (len(body)-8)/width {
				return invalid("the MP4 file's %s box is cut", x.kind)
			}
			for i := range n {
				at := body[8+i*width:]
				var off int64
				if width == 4 {
					off = int64(binary.BigEndian.Uint32(at))
				} else {
					off = int64(min(binary.BigEndian.Uint64(at), math.MaxInt64))
				}
				if off < from || off >= to {
					continue
				}
				off += delta
				if width == 4 {
					if off > math.MaxUint32 {
						return invalid("the MP4 file's chunk offsets overflow when its index is moved")
					}
					binary.BigEndian.PutUint32(at, uint32(off))
				} else {
					binary.BigEndian.PutUint64(at, uint64(off))
				}
			}
		}
	}
	return nil
}
