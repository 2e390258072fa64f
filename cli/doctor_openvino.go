//go:build cgo

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu/openvino"
)

// openLibrary finds and loads OpenVINO GenAI's C library as the daemon
// would (its --openvino-lib, else discovery).
func openLibrary(cfg daemon.Config, getenv func(string) string) (*openvino.Library, error) {
	return openvino.OpenLibrary(openvino.LibraryOptions{Path: cfg.OpenVINOLib, Getenv: getenv})
}

// doctorProbeInChild: doctor loads OpenVINO in a child process (probeLibrary).
const doctorProbeInChild = true

// printDevices lists the devices OpenVINO sees.
func printDevices(cfg daemon.Config, w io.Writer) error {
	lib, err := openLibrary(cfg, os.Getenv)
	if err != nil {
		return err
	}
	devices, err := lib.Devices()
	if err != nil {
		return err
	}
	for _, d := range devices {
		fmt.Fprintf(w, "%-8s %s\n", d.Name, d.FullName)
	}
	return nil
}

// examineLibrary is npud doctor's look at OpenVINO GenAI: the library
// (or where it was looked for) and the devices it sees.
func examineLibrary(cfg daemon.Config, getenv func(string) string, r *doctorReport) bool {
	lib, err := openLibrary(cfg, getenv)
	if err != nil {
		var lerr *openvino.LoadError
		if errors.As(err, &lerr) {
			for _, a := range lerr.Attempts {
				r.Searched = append(r.Searched, doctorAttempt(a))
			}
		}
		if errors.Is(err, openvino.ErrNotFound) && examineCore(cfg, getenv, r) {
			return false
		}
		fix := fixOpenVINO
		if errors.Is(err, openvino.ErrTooOld) || errors.Is(err, openvino.ErrMissingSymbol) {
			fix = "upgrade OpenVINO GenAI to " + openvino.MinVersion.String() + " or newer (docs/OPENVINO.md)"
		}
		r.add("openvino library", checkFail, err.Error(), fix)
		return false
	}
	r.Library = &doctorLibrary{Path: lib.GenAIPath, Core: lib.CorePath, Version: lib.Version.String(), Build: lib.Build, Source: lib.Source}
	r.add("openvino library", checkOK, fmt.Sprintf("OpenVINO GenAI %s from %s (found by %s)", lib.Build, lib.GenAIPath, lib.Source), "")
	examineServiceCanSee(lib.GenAIPath, r)
	devices, err := lib.Devices()
	if err != nil {
		r.add("devices", checkFail, "listing devices: "+err.Error(), fixNPUDriver)
		return true
	}
	for _, d := range devices {
		r.Devices = append(r.Devices, doctorDevice{Name: d.Name, FullName: d.FullName, DriverVersion: d.DriverVersion})
	}
	// Every pipeline starts GenAI's tokenizer, which loads
	// openvino-tokenizers as an extension: ready means it loaded here.
	file, err := lib.LoadTokenizers()
	if err != nil {
		r.add("tokenizers", checkFail, "every model load would fail: "+err.Error(), fixTokenizers)
		return false
	}
	where := "beside GenAI's library"
	if lib.Tokenizers != "" {
		where = "found by npud, which points GenAI at it (" + openvino.EnvTokenizersPath + ")"
	}
	r.add("tokenizers", checkOK, fmt.Sprintf("openvino-tokenizers %s loads (%s)", file, where), "")
	return true
}

// fixTokenizers is how to give GenAI its tokenizers library.
const fixTokenizers = "install openvino-tokenizers of the same release as OpenVINO GenAI (the archive carries it beside GenAI's library; " +
	"pip install openvino-tokenizers puts it in site-packages/openvino_tokenizers/lib), or set " + openvino.EnvTokenizersPath + " to its file"

// fixGenAIC is how to get GenAI's C library where only the PyPI wheels
// are installed: they hold GenAI's C++ library and Python module only
// (openvino.genai's pyproject.toml installs the wheel_genai component;
// src/c/CMakeLists.txt installs the C library as core_c_genai, which the
// archives carry).
const fixGenAIC = "GenAI's C library (libopenvino_genai_c) is in the OpenVINO GenAI archive, not in the PyPI wheels: " +
	"unpack the archive of the same release from https://storage.openvinotoolkit.org/repositories/openvino_genai/packages/ " +
	"under /opt/intel (found without configuration), or anywhere and point --openvino-lib at its runtime/lib/intel64 (docs/OPENVINO.md)"

// examineCore runs when GenAI's C library was not found: if OpenVINO's
// core C library is there (a pip install of openvino-genai, the path most
// users take), doctor reports its real version and devices and says that
// GenAI's C library is what is missing, and how to get it.
func examineCore(cfg daemon.Config, getenv func(string) string, r *doctorReport) bool {
	core, err := openvino.OpenCore(openvino.LibraryOptions{Path: cfg.OpenVINOLib, Getenv: getenv})
	if err != nil {
		return false
	}
	where := core.CorePath
	if core.Source == "python wheel" {
		// site-packages/openvino/libs/libopenvino_c.so.NNNN
		where = filepath.Dir(filepath.Dir(filepath.Dir(core.CorePath)))
	}
	examineServiceCanSee(core.CorePath, r)
	r.add("openvino runtime", checkOK, fmt.Sprintf("OpenVINO %s, core C library %s (found by %s)", core.Build, core.CorePath, core.Source), "")
	r.add("openvino library", checkFail,
		fmt.Sprintf("OpenVINO %s is installed (%s) but GenAI's C library is not: npud needs libopenvino_genai_c of the same release", shortBuild(core.Build), where),
		fixGenAIC)
	devices, err := core.Devices()
	if err != nil {
		r.add("devices", checkFail, "listing devices: "+err.Error(), fixNPUDriver)
		return true
	}
	for _, d := range devices {
		r.Devices = append(r.Devices, doctorDevice{Name: d.Name, FullName: d.FullName, DriverVersion: d.DriverVersion})
	}
	examineDevices(r)
	return true
}

// shortBuild is a build number's release: 2026.4.1 of
// "2026.4.1-22982-e213a147257-releases/2026/4".
func shortBuild(build string) string {
	release, _, _ := strings.Cut(build, "-")
	return release
}

// serviceHidden are the folders the systemd unit hides from the service
// (ProtectHome=yes, PrivateTmp=yes in systemd/npud.service).
var serviceHidden = []string{"/home/", "/root/", "/run/user/", "/tmp/", "/var/tmp/"}

// examineServiceCanSee warns when OpenVINO was found where the npud
// service cannot read it: a virtual environment or an unpacked archive in
// a home folder works for npud run by hand, never for the service. npud
// loads the libraries' dependency chain by path itself, so the unit needs
// no LD_LIBRARY_PATH, only a folder it can see.
func examineServiceCanSee(path string, r *doctorReport) {
	for _, hidden := range serviceHidden {
		if strings.HasPrefix(path, hidden) {
			r.add("service can load openvino", checkWarn,
				fmt.Sprintf("%s is under %s, which the npud service does not see (ProtectHome, PrivateTmp in its unit)", path, strings.TrimSuffix(hidden, "/")),
				"for the service, unpack OpenVINO GenAI under /opt/intel (or another folder outside /home and /tmp) and point openvino-lib in /etc/npud/npud.toml at it")
			return
		}
	}
}
