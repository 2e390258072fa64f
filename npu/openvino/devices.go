//go:build cgo

package openvino

/*
#include <stdlib.h>
#include "ovapi.h"

static const char* npud_device_at(ov_available_devices_t* d, size_t i) { return d->devices[i]; }
static const char* npud_call_cstr(void* fn) { return ((const char* (*)(void))fn)(); }
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Device is an inference device OpenVINO sees.
type Device struct {
	Name     string // NPU, GPU, GPU.1, CPU
	FullName string // FULL_DEVICE_NAME, for people
	// DriverVersion is the NPU driver's version (NPU_DRIVER_VERSION), for
	// NPUs only; "" when the plugin does not say.
	DriverVersion string
}

// Devices lists the devices OpenVINO's core finds on this machine.
func (l *Library) Devices() ([]Device, error) {
	api := l.api
	var core *C.ov_core_t
	if err := check(api, "ov_core_create", "", C.npud_ov_core_create(api, &core)); err != nil {
		return nil, err
	}
	defer C.npud_ov_core_free(api, core)
	var list C.ov_available_devices_t
	if err := check(api, "ov_core_get_available_devices", "", C.npud_ov_core_get_available_devices(api, core, &list)); err != nil {
		return nil, err
	}
	defer C.npud_ov_available_devices_free(api, &list)
	out := make([]Device, 0, int(list.size))
	for i := range C.size_t(list.size) {
		name := C.npud_device_at(&list, i)
		d := Device{Name: C.GoString(name)}
		d.FullName, _ = deviceProperty(api, core, name, "FULL_DEVICE_NAME")
		if deviceKind(d.Name) == "NPU" {
			d.DriverVersion, _ = deviceProperty(api, core, name, "NPU_DRIVER_VERSION")
		}
		out = append(out, d)
	}
	return out, nil
}

// deviceProperty reads one device property as text.
func deviceProperty(api *C.npud_ov_api, core *C.ov_core_t, device *C.char, key string) (string, bool) {
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	var value *C.char
	if C.npud_ov_core_get_property(api, core, device, ckey, &value) != C.OK {
		return "", false
	}
	defer C.npud_ov_free(api, value)
	return C.GoString(value), true
}

// askProperty asks a device for a property as npud does and returns the
// status with the core's text for it (ov_get_error_info) and the message
// of the exception behind it (ov_get_last_err_msg, "" when the library
// has none). The conformance tests compare these with the real core.
func (l *Library) askProperty(device, key string) (value string, status int, info, lastErr string) {
	api := l.api
	var core *C.ov_core_t
	if st := C.npud_ov_core_create(api, &core); st != C.OK {
		return "", int(st), l.errorInfo(int(st)), ""
	}
	defer C.npud_ov_core_free(api, core)
	cdev, ckey := C.CString(device), C.CString(key)
	defer C.free(unsafe.Pointer(cdev))
	defer C.free(unsafe.Pointer(ckey))
	var v *C.char
	st := C.npud_ov_core_get_property(api, core, cdev, ckey, &v)
	if st == C.OK {
		value = C.GoString(v)
		C.npud_ov_free(api, v)
	}
	cname := C.CString("ov_get_last_err_msg")
	defer C.free(unsafe.Pointer(cname))
	if fn := C.npud_ov_symbol(api, cname); fn != nil {
		if msg := C.npud_call_cstr(fn); msg != nil {
			lastErr = C.GoString(msg)
		}
	}
	return value, int(st), l.errorInfo(int(st)), lastErr
}

// errorInfo is the core's text for a status (ov_get_error_info).
func (l *Library) errorInfo(status int) string {
	return C.GoString(C.npud_ov_get_error_info(l.api, C.ov_status_e(status)))
}

// autoOrder is the AUTO preference: the NPU first, then the GPUs, then CPU.
var autoOrder = []string{"NPU", "GPU", "CPU"}

// candidates returns the devices to try for the configured device: the
// named one, or for AUTO every available device in autoOrder.
func candidates(configured string, available []Device) ([]string, error) {
	has := func(name string) bool {
		for _, d := range available {
			if d.Name == name {
				return true
			}
		}
		return false
	}
	if configured != "" && configured != "AUTO" {
		if !has(configured) {
			return nil, fmt.Errorf("device %q is not available (OpenVINO sees %v)", configured, names(available))
		}
		return []string{configured}, nil
	}
	var out []string
	for _, kind := range autoOrder {
		for _, d := range available {
			if d.Name == kind || (len(d.Name) > len(kind) && d.Name[:len(kind)+1] == kind+".") {
				out = append(out, d.Name)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no NPU, GPU or CPU device available (OpenVINO sees %v)", names(available))
	}
	return out, nil
}

func names(ds []Device) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// deviceKind is a device name without its index: NPU for "NPU.0", GPU for
// "GPU.1". Device properties and behaviour go by kind.
func deviceKind(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}
