//go:build !race

package openvino

const raceEnabled = false
