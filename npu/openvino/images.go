//go:build cgo

package openvino

/*
#include <stdlib.h>
#include <string.h>
#include "ovapi.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/npud/npud/npu"
)

// imageTensors are a request's images as the VLM pipeline takes them: u8
// tensors of shape [H, W, 3] over pixel memory in C's heap. GenAI wraps that
// memory without copying it, so it lives until the generation returned.
type imageTensors struct {
	array unsafe.Pointer // n tensor pointers (ov_tensor_t*), in C memory
	n     int
	bufs  []unsafe.Pointer
}

func hasImages(msgs []npu.Message) bool {
	for _, m := range msgs {
		if len(m.Images) > 0 {
			return true
		}
	}
	return false
}

// newImageTensors makes the tensors of every image in msgs, in order: in
// chat mode GenAI gives the images it is passed to the last user message,
// so the model sees each picture of the conversation with the question.
func newImageTensors(api *C.npud_ov_api, msgs []npu.Message) (t imageTensors, err error) {
	var all []npu.Image
	for _, m := range msgs {
		all = append(all, m.Images...)
	}
	if len(all) == 0 {
		return imageTensors{}, nil
	}
	t.array = C.calloc(C.size_t(len(all)), C.size_t(unsafe.Sizeof(uintptr(0))))
	defer func() {
		if err != nil {
			t.free(api)
		}
	}()
	slots := unsafe.Slice((**C.ov_tensor_t)(t.array), len(all))
	dims := (*C.int64_t)(C.malloc(3 * C.size_t(unsafe.Sizeof(C.int64_t(0)))))
	defer C.free(unsafe.Pointer(dims))
	d := unsafe.Slice(dims, 3)
	for i, img := range all {
		if img.Width <= 0 || img.Height <= 0 || len(img.RGB) != img.Width*img.Height*3 {
			return t, fmt.Errorf("image %d: %d bytes for %dx%d pixels: want three a pixel", i, len(img.RGB), img.Width, img.Height)
		}
		buf := C.CBytes(img.RGB)
		t.bufs = append(t.bufs, buf)
		d[0], d[1], d[2] = C.int64_t(img.Height), C.int64_t(img.Width), 3
		var shape C.ov_shape_t
		if err := check(api, "ov_shape_create", "", C.npud_ov_shape_create(api, 3, dims, &shape)); err != nil {
			return t, err
		}
		st := C.npud_ov_tensor_create_from_host_ptr(api, C.U8, shape, buf, &slots[i])
		C.npud_ov_shape_free(api, &shape)
		if err := check(api, "ov_tensor_create_from_host_ptr", fmt.Sprintf("image %d, %dx%d", i, img.Width, img.Height), st); err != nil {
			return t, err
		}
		t.n++
	}
	return t, nil
}

// list is the tensor array for the C call (nil without images).
func (t *imageTensors) list() **C.ov_tensor_t {
	if t.n == 0 {
		return nil
	}
	return (**C.ov_tensor_t)(t.array)
}

func (t *imageTensors) free(api *C.npud_ov_api) {
	if t.array != nil {
		for _, tensor := range unsafe.Slice((**C.ov_tensor_t)(t.array), t.n) {
			C.npud_ov_tensor_free(api, tensor)
		}
		C.free(t.array)
	}
	for _, b := range t.bufs {
		C.free(b)
	}
	*t = imageTensors{}
}
