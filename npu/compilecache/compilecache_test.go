package compilecache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

func TestIndexTellsFirstCompilesFromCachedBlobs(t *testing.T) {
	compile := func(x *Index, dir, model, blob string) {
		done := x.Track(model)
		if blob != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, blob), []byte("x"), 0o600))
		}
		done(nil)
	}
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, dir string, fp *string)
		want  npu.CompileState
	}{
		{"the blob is there", func(*testing.T, string, *string) {}, npu.CompileCached},
		{"the blob was removed", func(t *testing.T, dir string, _ *string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "a1.blob")))
		}, npu.CompileFirst},
		{"the model or its properties changed", func(_ *testing.T, _ string, fp *string) { *fp = "other" }, npu.CompileFirst},
		{"the index is damaged", func(t *testing.T, dir string, _ *string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, IndexFile), []byte("{not json"), 0o600))
		}, npu.CompileFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fp := "v1"
			x := New(dir, func(string) string { return fp }, nil)
			assert.Equal(t, npu.CompileFirst, x.State("qwen"), "never compiled")
			compile(x, dir, "qwen", "a1.blob")
			compile(x, dir, "phi", "b2.blob")
			tc.after(t, dir, &fp)
			assert.Equal(t, tc.want, x.State("qwen"))
		})
	}
}

func TestIndexKeepsTheRecordOnImportsAndFailures(t *testing.T) {
	dir := t.TempDir()
	x := New(dir, func(string) string { return "v1" }, nil)
	done := x.Track("qwen")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a1.blob"), []byte("x"), 0o600))
	done(nil)
	x.Track("qwen")(nil) // imported: no new blob
	assert.Equal(t, npu.CompileCached, x.State("qwen"))

	done = x.Track("phi")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "half.blob"), []byte("x"), 0o600))
	done(errors.New("compile failed"))
	assert.Equal(t, npu.CompileFirst, x.State("phi"), "a failed load records nothing")
	assert.Equal(t, npu.CompileCached, x.State("qwen"))
}

func TestLoadStatusText(t *testing.T) {
	for _, tc := range []struct {
		status npu.LoadStatus
		want   string
	}{
		{npu.LoadStatus{Compile: npu.CompileFirst, Device: "NPU"}, "compiling for NPU (first time)"},
		{npu.LoadStatus{Compile: npu.CompileFirst}, "compiling (first time)"},
		{npu.LoadStatus{Compile: npu.CompileCached, Device: "NPU"}, "loading the compiled model"},
		{npu.LoadStatus{}, "loading"},
	} {
		assert.Equal(t, tc.want, tc.status.Text())
	}
	st := npu.LoadStatus{Model: "a\nb", Compile: npu.CompileFirst, Device: "NPU"}
	assert.Equal(t, `loading model "a\nb": compiling for NPU (first time)… 0 s`, st.Progress(st.Since), "one line")
}
