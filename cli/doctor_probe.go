package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/npud/npud/daemon"
)

// doctorProbeEnv carries the doctor's request to its probe: a child
// process (npud's own binary, as `npud doctor`) that loads OpenVINO, lists
// the devices and loads the tokenizers, and answers with what it found on
// its standard output. The daemon runs native code only in its workers for
// the same reason: a native crash, in a plugin or in the runtime's cleanup
// at exit, ends that process, not the one that reports it.
const doctorProbeEnv = "NPUD_DOCTOR_PROBE"

// doctorProbeTimeout bounds the probe: loading the runtime and asking the
// devices takes seconds; a probe past this is hung.
const doctorProbeTimeout = 2 * time.Minute

// probeEnvNames are the variables discovery reads, handed to the probe as
// doctor's getenv sees them.
var probeEnvNames = []string{"OpenVINO_DIR", "INTEL_OPENVINO_DIR", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "PATH", "OPENVINO_TOKENIZERS_PATH_GENAI"}

// probeRequest is what the probe looks at.
type probeRequest struct {
	OpenVINOLib string            `json:"openvino_lib"`
	Env         map[string]string `json:"env"`
}

// probeResult is what the probe found: its part of doctor's report.
type probeResult struct {
	OK       bool            `json:"ok"`
	Library  *doctorLibrary  `json:"library,omitempty"`
	Searched []doctorAttempt `json:"searched,omitempty"`
	Devices  []doctorDevice  `json:"devices"`
	Checks   []doctorCheck   `json:"checks"`
}

// maxProbeOutput bounds what doctor reads of the probe.
const (
	maxProbeOutput = 1 << 20
	maxProbeStderr = 2 << 10
)

// probeLibrary runs examineLibrary in a child process and adds what it
// found to r; a probe that crashes, hangs or answers nonsense is a failed
// check, saying how it ended, never a crash of doctor.
func probeLibrary(ctx context.Context, cfg daemon.Config, getenv func(string) string, r *doctorReport) bool {
	if !doctorProbeInChild {
		return examineLibrary(cfg, getenv, r)
	}
	req := probeRequest{OpenVINOLib: cfg.OpenVINOLib, Env: map[string]string{}}
	for _, name := range probeEnvNames {
		req.Env[name] = getenv(name)
	}
	res, err := runProbe(ctx, req)
	if err != nil {
		r.add("openvino probe", checkFail, "loading OpenVINO in a child process: "+err.Error(),
			"run npud doctor again; a crash that repeats is the runtime's or a plugin's (report it with the output above)")
		return false
	}
	r.Library, r.Searched = res.Library, append(r.Searched, res.Searched...)
	r.Devices = append(r.Devices, res.Devices...)
	r.Checks = append(r.Checks, res.Checks...)
	return res.OK
}

// runProbe starts the probe and reads its answer.
func runProbe(ctx context.Context, req probeRequest) (probeResult, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return probeResult{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return probeResult{}, fmt.Errorf("finding npud's own binary: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, doctorProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "doctor")
	cmd.Env = append(daemon.NativeChildEnviron(os.Environ()), doctorProbeEnv+"="+string(payload))
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: maxProbeOutput}
	// A crash says what it was first (Go's "SIGSEGV: segmentation
	// violation", a C++ runtime's "terminate called after throwing"); the
	// goroutine dump after it is kept from the report.
	cmd.Stderr = &limitedWriter{w: &stderr, n: maxProbeStderr}
	runErr := cmd.Run()
	var res probeResult
	decodeErr := json.Unmarshal(stdout.Bytes(), &res)
	if runErr == nil && decodeErr == nil {
		return res, nil
	}
	why := runErr
	if why == nil {
		why = fmt.Errorf("its answer does not decode: %w", decodeErr)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = fmt.Errorf("no answer within %s: %w", doctorProbeTimeout, runErr)
	}
	if said := terminalSafe(firstLines(stderr.String(), 3), false); said != "" {
		return probeResult{}, fmt.Errorf("the probe ended with %w; it said: %s", why, said)
	}
	return probeResult{}, fmt.Errorf("the probe ended with %w", why)
}

// IsDoctorProbe reports whether this process was started as npud doctor's
// probe. Test binaries that run doctor check it first in TestMain, and
// serve as the probe themselves (os.Executable is the test binary).
func IsDoctorProbe() bool { return os.Getenv(doctorProbeEnv) != "" }

// RunDoctorProbe is the probe: it examines the library as asked and
// writes what it found to stdout. The request's variables become this
// process's, so that everything that reads the environment here (the
// library's discovery, GenAI's tokenizer lookup) sees what doctor saw.
func RunDoctorProbe(stdout io.Writer) int {
	var req probeRequest
	if err := json.Unmarshal([]byte(os.Getenv(doctorProbeEnv)), &req); err != nil {
		fmt.Fprintf(os.Stderr, "npud doctor probe: started without a valid %s: %v\n", doctorProbeEnv, err)
		return 2
	}
	_ = os.Unsetenv(doctorProbeEnv)
	for _, name := range probeEnvNames {
		var err error
		if v := req.Env[name]; v != "" {
			err = os.Setenv(name, v)
		} else {
			err = os.Unsetenv(name)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "npud doctor probe: %s: %v\n", name, err)
			return 1
		}
	}
	r := doctorReport{Devices: []doctorDevice{}}
	ok := examineLibrary(daemon.Config{OpenVINOLib: req.OpenVINOLib}, os.Getenv, &r)
	res := probeResult{OK: ok, Library: r.Library, Searched: r.Searched, Devices: r.Devices, Checks: r.Checks}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// limitedWriter keeps the first n bytes written and discards the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	keep := min(len(p), l.n)
	if keep > 0 {
		if _, err := l.w.Write(p[:keep]); err != nil {
			return 0, err
		}
		l.n -= keep
	}
	return len(p), nil
}

// firstLines are the first n non-empty lines of s, joined by " / ".
func firstLines(s string, n int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" && len(out) < n {
			out = append(out, line)
		}
	}
	return strings.Join(out, " / ")
}
