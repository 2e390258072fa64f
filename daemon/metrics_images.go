package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/npud/npud/wire/imagein"
)

// watchImageMemory adds the gauge of what decoded images hold of
// --max-image-memory now: the pictures of requests queued or generating
// and the decoders' buffers. At rest it is 0; a value that stays up
// with no image request in flight is memory some path never gave back.
func (m *metrics) watchImageMemory(budget *imagein.Budget) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "npud_image_memory_bytes",
		Help: "Decoded image memory held now (of --max-image-memory): pictures of queued and running requests, and decoders' buffers."},
		func() float64 { return float64(budget.InUse()) }))
}
