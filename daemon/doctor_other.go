//go:build !unix

package daemon

// groupOf is Linux's question (device nodes and groups).
func groupOf(string) string { return "render" }
