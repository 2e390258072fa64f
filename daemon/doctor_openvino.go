//go:build cgo

package daemon

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/npud/npud/npu/openvino"
)

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
func examineCore(cfg Config, getenv func(string) string, r *doctorReport) bool {
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
