package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu/modelstore"
)

// A doctor check's outcome.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
)

// doctorCheck is one thing npud doctor looked at.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"` // the command or page that fixes it
}

// doctorLibrary is the OpenVINO GenAI library doctor found.
type doctorLibrary struct {
	Path    string `json:"path"`
	Core    string `json:"core,omitempty"`
	Version string `json:"version"`
	Build   string `json:"build"`
	Source  string `json:"source"`
}

// doctorDevice is a device OpenVINO sees.
type doctorDevice struct {
	Name          string `json:"name"`
	FullName      string `json:"full_name,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
}

// doctorAttempt is a place the library was looked for.
type doctorAttempt struct {
	Source string `json:"source"`
	Where  string `json:"where"`
	Found  string `json:"found,omitempty"`
	Err    string `json:"error,omitempty"`
}

// doctorReport is everything npud doctor found; Ready is true only when a
// real engine would serve.
type doctorReport struct {
	Ready    bool            `json:"ready"`
	Library  *doctorLibrary  `json:"library,omitempty"`
	Searched []doctorAttempt `json:"searched,omitempty"`
	Devices  []doctorDevice  `json:"devices"`
	Models   []string        `json:"models"`
	Checks   []doctorCheck   `json:"checks"`
}

func (r *doctorReport) add(name, status, detail, fix string) {
	r.Checks = append(r.Checks, doctorCheck{Name: name, Status: status, Detail: detail, Fix: fix})
}

// The fixes doctor points to. They name pages of the projects that ship
// each piece and the guide in this repository's docs/OPENVINO.md.
const (
	fixOpenVINO = "install OpenVINO GenAI 2026.2 or newer (docs/OPENVINO.md): unpack its archive from " +
		"https://storage.openvinotoolkit.org/repositories/openvino_genai/packages/ under /opt/intel " +
		"(or source its setupvars.sh before npud), or point npud at it with --openvino-lib"
	fixNPUDriver = "install the Linux NPU driver from https://github.com/intel/linux-npu-driver/releases " +
		"(a Core Ultra processor and kernel 6.6 or newer), then reboot"
	fixModel = "npud pull OpenVINO/Qwen2.5-1.5B-Instruct-int4-ov (any OpenVINO IR repository), " +
		"or export one with optimum-cli export openvino --model MODEL --weight-format int4 DIR"
	// fixModelsDir says where models go, and how to put them elsewhere.
	fixModelsDir = "npud keeps models in /var/lib/npud/models as root (and the service), in ~/.local/state/npud/models " +
		"($XDG_STATE_HOME/npud/models) for other users; another folder: --models-dir DIR (or NPUD_MODELS_DIR)"
)

const doctorUsage = `usage: npud doctor [--json] [serve flags]

Tells why the NPU is not used and how to fix it: the OpenVINO GenAI library
(where it was found, or where npud looked), the devices OpenVINO sees, the
NPU device node and its permissions, the models and their files, the cache
folder and the listen address. Exit code 0 only when a real engine is ready.
It reads the configuration as npud serve does (--config, NPUD_*, flags).
`

func doctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if getenv(doctorProbeEnv) != "" {
		return RunDoctorProbe(stdout) // doctor's own child: see probeLibrary
	}
	asJSON := false
	var rest []string
	for _, a := range args {
		switch {
		case a == "--json" || a == "-json":
			asJSON = true
		case isHelp(a):
			fmt.Fprint(stdout, doctorUsage)
			return 0
		default:
			rest = append(rest, a)
		}
	}
	cfg, err := daemon.ParseServe(rest, getenv, io.Discard)
	if err != nil {
		fmt.Fprintf(stderr, "npud doctor: %v\n", err)
		return 2
	}
	report := examine(ctx, cfg, getenv)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	} else {
		printReport(stdout, report)
	}
	if !report.Ready {
		return 1
	}
	return 0
}

// examine runs every check.
func examine(ctx context.Context, cfg daemon.Config, getenv func(string) string) doctorReport {
	r := doctorReport{Devices: []doctorDevice{}, Models: []string{}}
	libraryOK := probeLibrary(ctx, cfg, getenv, &r)
	devicesOK := libraryOK && examineDevices(&r)
	examineDeviceNode(&r)
	modelsOK := examineModels(cfg.ModelsDir, &r)
	examineCache(cfg.CacheDir, &r)
	examineListener(ctx, cfg.Listen, &r)
	r.Ready = libraryOK && devicesOK && modelsOK
	switch {
	case r.Ready && cfg.Engine == "sim":
		r.add("engine", checkWarn, "a real engine is ready, but the configuration says engine = \"sim\"", "set engine = \"auto\" (or openvino)")
	case r.Ready:
		r.add("engine", checkOK, "npud serve will run the OpenVINO engine", "")
	default:
		r.add("engine", checkFail, "npud serve would run the simulated engine (made-up text)", "the fixes above, then npud doctor again")
	}
	return r
}

func examineDevices(r *doctorReport) bool {
	if len(r.Devices) == 0 {
		r.add("devices", checkFail, "OpenVINO sees no device", fixNPUDriver)
		return false
	}
	names := make([]string, 0, len(r.Devices))
	npu := false
	for _, d := range r.Devices {
		label := d.Name
		if d.FullName != "" {
			label += " (" + d.FullName + ")"
		}
		if strings.HasPrefix(d.Name, "NPU") {
			npu = true
			if d.DriverVersion != "" {
				label += ", driver " + d.DriverVersion
			}
		}
		names = append(names, label)
	}
	if !npu {
		r.add("devices", checkWarn, "OpenVINO sees "+strings.Join(names, ", ")+" but no NPU: models run on the GPU or CPU", fixNPUDriver)
		return true
	}
	r.add("devices", checkOK, strings.Join(names, ", "), "")
	return true
}

// examineDeviceNode checks the NPU's device node on Linux: present, and
// open to the service user (the render group).
func examineDeviceNode(r *doctorReport) {
	if runtime.GOOS != "linux" {
		return
	}
	nodes, _ := filepath.Glob("/dev/accel/accel*")
	if len(nodes) == 0 {
		r.add("npu device node", checkWarn, "no /dev/accel/accel* (the NPU driver is not loaded)", fixNPUDriver)
		return
	}
	for _, node := range nodes {
		group := groupOf(node)
		f, err := os.OpenFile(node, os.O_RDWR, 0)
		if err != nil {
			r.add("npu device node", checkWarn, fmt.Sprintf("%s is not open to this user: %v", node, err), deviceNodeFix(node, group))
			continue
		}
		_ = f.Close()
		detail := node + " is open to this user"
		if group != "render" && group != "" {
			r.add("npu device node", checkWarn, detail+", but the service (which joins group render) cannot open it", deviceNodeFix(node, group))
			continue
		}
		if member, known := userInGroup("npud", group); known && !member {
			r.add("npu device node", checkWarn, detail+"; the service user npud is not in group "+group,
				"sudo usermod -aG "+group+" npud && sudo systemctl restart npud")
			continue
		}
		r.add("npu device node", checkOK, detail, "")
	}
}

// deviceNodeFix says how to open the NPU's node to this user and to the
// service. The unit runs as a DynamicUser (no account to add to a group)
// that joins render (SupplementaryGroups=render), so the node must belong
// to render: systemd 254+ does that, older ones (Debian 12) need a rule.
func deviceNodeFix(node, group string) string {
	if group != "render" {
		return fmt.Sprintf("%s belongs to group %s, and the service joins render: add the udev rule "+
			`SUBSYSTEM=="accel", KERNEL=="accel*", GROUP="render", MODE="0660" (docs/OPENVINO.md, step 3), `+
			"then sudo usermod -a -G render $USER to use it yourself (and log in again)", node, group)
	}
	return "sudo usermod -a -G render $USER (and log in again); the service joins render through its unit (SupplementaryGroups=render)"
}

// userInGroup reports whether name is in group; known is false when the
// user or the group does not exist here.
func userInGroup(name, group string) (member, known bool) {
	u, err := user.Lookup(name)
	if err != nil {
		return false, false
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return false, false
	}
	ids, err := u.GroupIds()
	if err != nil {
		return false, false
	}
	for _, id := range ids {
		if id == g.Gid {
			return true, true
		}
	}
	return u.Gid == g.Gid, true
}

// modelFiles are what a GenAI pipeline reads from a model folder.
var modelFiles = []struct{ file, what string }{
	{"openvino_model.xml", "the model's IR"},
	{"openvino_model.bin", "the model's weights"},
	{"openvino_tokenizer.xml", "the tokenizer"},
	{"openvino_detokenizer.xml", "the detokenizer"},
}

// embeddingFiles are what npud reads from an embedding model's folder
// (npu/openvino/embed.go): no detokenizer or chat template.
var embeddingFiles = []struct{ file, what string }{
	{"openvino_model.bin", "the model's weights"},
	{"openvino_tokenizer.xml", "the tokenizer"},
}

// examineEmbeddingModel checks an embedding model's folder: its files and
// its pooling configuration, which its load reads.
func examineEmbeddingModel(folder, model string, r *doctorReport, good *int) {
	name := "model " + model
	var missing []string
	for _, f := range embeddingFiles {
		if _, err := os.Stat(filepath.Join(folder, f.file)); err != nil {
			missing = append(missing, f.file+" ("+f.what+")")
		}
	}
	if len(missing) > 0 {
		r.add(name, checkFail, "an embedding model missing "+strings.Join(missing, ", "),
			"pull it again (npud pull OWNER/"+model+"), or export it with optimum-cli, which writes the tokenizer too")
		return
	}
	cfg, err := modelstore.ReadEmbeddingConfig(folder)
	if err != nil {
		r.add(name, checkFail, "an embedding model whose pooling npud cannot follow: "+err.Error(),
			"use an export whose 1_Pooling/config.json turns on CLS, mean or last-token pooling")
		return
	}
	r.Models = append(r.Models, model)
	*good++
	r.add(name, checkOK, fmt.Sprintf("an embedding model: IR, weights and tokenizer present; %s pooling, normalised: %v; it embeds at /v1/embeddings and /api/embed",
		cfg.Pooling, cfg.Normalize), "")
}

func examineModels(dir string, r *doctorReport) bool {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		r.add("models folder", checkFail, dir+" does not exist yet", fixModel+"; "+fixModelsDir)
		return false
	}
	if err != nil {
		r.add("models folder", checkFail, fmt.Sprintf("%s cannot be read: %v", dir, err), "check its owner and mode: the service user npud reads it; "+fixModelsDir)
		return false
	}
	good := 0
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasSuffix(e.Name(), ".partial") {
			continue
		}
		folder := filepath.Join(dir, e.Name())
		if modelstore.IsSpeechModel(folder) {
			// A Whisper export: its own files, and no chat template to want.
			name := "model " + e.Name()
			if missing := modelstore.MissingSpeechFiles(folder); len(missing) > 0 {
				r.add(name, checkFail, "a speech model missing "+strings.Join(missing, ", "),
					"pull it again (npud pull OpenVINO/"+e.Name()+"), or export it with optimum-cli, which writes the tokenizers and generation_config.json too")
				continue
			}
			r.Models = append(r.Models, e.Name())
			good++
			r.add(name, checkOK, "a speech (Whisper) model: encoder, decoder, tokenizer, detokenizer and generation config present; it transcribes at /v1/audio/transcriptions", "")
			continue
		}
		if modelstore.IsEmbeddingModel(folder) {
			examineEmbeddingModel(folder, e.Name(), r, &good)
			continue
		}
		if modelstore.IsRerankModel(folder) {
			examineRerankModel(folder, e.Name(), r, &good)
			continue
		}
		var missing []string
		for _, f := range modelFiles {
			if modelstore.HasVisionEncoder(folder) && strings.HasPrefix(f.file, "openvino_model.") {
				// A vision-language model: its language model has another name.
				f.file = strings.Replace(f.file, "openvino_model.", "openvino_language_model.", 1)
			}
			if _, err := os.Stat(filepath.Join(folder, f.file)); err != nil {
				missing = append(missing, f.file+" ("+f.what+")")
			}
		}
		if len(missing) == 4 {
			continue // not a model folder
		}
		name := "model " + e.Name()
		if len(missing) > 0 {
			r.add(name, checkFail, "missing "+strings.Join(missing, ", "),
				"pull it again (npud pull OWNER/"+e.Name()+"), or export it with optimum-cli, which writes the tokenizers too")
			continue
		}
		r.Models = append(r.Models, e.Name())
		good++
		if !modelstore.HasChatTemplate(folder) {
			r.add(name, checkWarn, "no chat template (tokenizer_config.json, processor_config.json, chat_template.json, chat_template.jinja, the tokenizer IR): "+
				"plain prompts only, chat requests are refused", "use an instruct model's export, which carries its template")
			continue
		}
		r.add(name, checkOK, "IR, weights, tokenizer, detokenizer and chat template present", "")
	}
	if good == 0 {
		r.add("models folder", checkFail, dir+" holds no complete model", fixModel+"; "+fixModelsDir)
		return false
	}
	r.add("models folder", checkOK, fmt.Sprintf("%s: %d model(s)", dir, good), "")
	return true
}

func examineCache(dir string, r *doctorReport) {
	if dir == "" {
		r.add("cache folder", checkWarn, "no cache-dir: every start compiles each model again (minutes on an NPU)", "set cache-dir")
		return
	}
	probe := dir
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		probe = filepath.Dir(dir) // npud makes it; its parent must let it
	}
	f, err := os.CreateTemp(probe, ".npud-doctor-*")
	if err != nil {
		r.add("cache folder", checkWarn, fmt.Sprintf("%s is not writable by this user: %v (compiled models are not kept)", dir, err),
			"the service writes it as user npud (systemd CacheDirectory); for npud serve by hand, pass --cache-dir to a folder of yours")
		return
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	r.add("cache folder", checkOK, dir+" is writable", "")
}

// examineListener checks the listen address is free, or says who has it.
func examineListener(ctx context.Context, addr string, r *doctorReport) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err == nil {
		_ = ln.Close()
		r.add("listen address", checkOK, addr+" is free", "")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if resp, herr := http.DefaultClient.Do(req); herr == nil {
		var h struct {
			Engine string `json:"engine"`
		}
		decodeErr := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK && decodeErr == nil && h.Engine != "" {
			r.add("listen address", checkOK, fmt.Sprintf("npud already serves %s (engine %s)", addr, h.Engine), "")
			return
		}
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if resp, herr := http.DefaultClient.Do(req); herr == nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		_ = resp.Body.Close()
		if strings.Contains(string(body), "Ollama is running") {
			r.add("listen address", checkFail, "Ollama listens on "+addr+": npud cannot start there",
				"stop Ollama (sudo systemctl disable --now ollama), or give npud another address (listen = \"127.0.0.1:11435\")")
			return
		}
	}
	r.add("listen address", checkFail, fmt.Sprintf("%s is taken: %v", addr, err), "free it, or set listen to another address")
}

func printReport(w io.Writer, r doctorReport) {
	mark := map[string]string{checkOK: "ok  ", checkWarn: "warn", checkFail: "FAIL"}
	if r.Library != nil {
		fmt.Fprintf(w, "OpenVINO GenAI %s (%s) from %s [%s]\n", r.Library.Version, r.Library.Build, r.Library.Path, r.Library.Source)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(w, "[%s] %s: %s\n", mark[c.Status], c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "       fix: %s\n", c.Fix)
		}
	}
	if r.Ready {
		fmt.Fprintln(w, "ready: npud serve runs models on OpenVINO")
	} else {
		fmt.Fprintln(w, "not ready: npud serve would fall back to the simulated engine")
	}
}
