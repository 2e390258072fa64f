//go:build race

package openvino

const raceEnabled = true
