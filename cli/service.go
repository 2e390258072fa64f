package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kardianos/service"

	"github.com/npud/npud/packaging"
	"github.com/npud/npud/systemd"
)

// serviceName is the unit name on systemd and the service name on Windows.
const serviceName = "npud"

// servicePaths are where an installed npud keeps its configuration,
// models and compiled-model cache.
type servicePaths struct{ config, models, cache string }

// defaultServicePaths follows each OS's convention: /etc and /var on
// Linux (the unit's ConfigurationDirectory, StateDirectory and
// CacheDirectory), ProgramData on Windows.
func defaultServicePaths(goos string, getenv func(string) string) servicePaths {
	if goos == "windows" {
		base := getenv("ProgramData")
		if base == "" {
			base = `C:\ProgramData`
		}
		base += `\npud`
		return servicePaths{config: base + `\npud.toml`, models: base + `\models`, cache: base + `\cache`}
	}
	return servicePaths{config: "/etc/npud/npud.toml", models: "/var/lib/npud/models", cache: "/var/cache/npud"}
}

// serviceConfig describes npud to the OS service manager. On systemd the
// unit is the project's hardened one (systemd/npud.service) with the real
// executable path; on Windows the service starts automatically and
// restarts on failure.
func serviceConfig(exe string, p servicePaths) *service.Config {
	unitExe := exe
	if strings.ContainsAny(exe, " \t") {
		unitExe = `"` + exe + `"`
	}
	return &service.Config{
		Name:        serviceName,
		DisplayName: "npud LLM server",
		Description: "Streaming LLM server for Intel NPUs (OpenAI- and Ollama-compatible) on OpenVINO GenAI",
		Arguments:   []string{"serve", "--config", p.config, "--models-dir", p.models, "--cache-dir", p.cache},
		Option: service.KeyValue{
			"SystemdScript":          strings.Replace(systemd.ServiceUnit(), "/usr/bin/npud", unitExe, 1),
			"Restart":                "on-failure",
			"ReloadSignal":           "HUP",
			"StartType":              "automatic",
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "5s",
			"OnFailureResetPeriod":   300,
		},
	}
}

const serviceUsage = `usage: npud service install | uninstall | start | stop | restart | status

install registers npud with the OS service manager: on Linux the hardened
systemd unit (configuration %s), on Windows an automatic service that
restarts on failure, with its configuration and models under ProgramData.
`

// serviceActions are the service manager's verbs, under `npud service`.
var serviceActions = []string{"install", "uninstall", "start", "stop", "restart", "status"}

// serviceMain runs `npud service ACTION`. Anything it does not expect,
// --help included, is answered without touching the service manager: an
// install must never be the side effect of asking how to install.
func serviceMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	help := func(w io.Writer) { fmt.Fprintf(w, serviceUsage, defaultServicePaths(runtime.GOOS, getenv).config) }
	if len(args) == 0 {
		help(stderr)
		return 2
	}
	if isHelp(args[0]) {
		help(stdout)
		return 0
	}
	if !slices.Contains(serviceActions, args[0]) {
		fmt.Fprintf(stderr, "npud service: unknown action %q\n\n", args[0])
		help(stderr)
		return 2
	}
	action := args[0]
	fs := flag.NewFlagSet("npud service "+action, flag.ContinueOnError)
	var printOnly bool
	if action == "install" {
		fs.BoolVar(&printOnly, "print", false, "print what install would write (the unit, with this executable), and change nothing")
	}
	rest, code := parseCommandFlags(fs, "npud service "+action, args[1:], stdout, stderr, func() { help(stdout) })
	if code >= 0 {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "npud service %s takes no arguments, got %q\n\n", action, strings.Join(rest, " "))
		help(stderr)
		return 2
	}
	if printOnly {
		return printServiceInstall(getenv, stdout, stderr)
	}
	return serviceCommand(action, getenv, stdout, stderr)
}

// printServiceInstall shows what `npud service install` would write,
// writing nothing: the systemd unit for this executable, or the Windows
// service's command line.
func printServiceInstall(getenv func(string) string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		fmt.Fprintf(stderr, "npud service install: cannot find the npud executable: %v\n", err)
		return 1
	}
	paths := defaultServicePaths(runtime.GOOS, getenv)
	cfg := serviceConfig(exe, paths)
	if runtime.GOOS == "windows" {
		fmt.Fprintf(stdout, "# the Windows service npud service install registers (automatic start, restart on failure)\n%s %s\n",
			exe, strings.Join(cfg.Arguments, " "))
		return 0
	}
	fmt.Fprintf(stdout, "# /etc/systemd/system/%s.service, as npud service install writes it (with %s where none exists)\n", serviceName, paths.config)
	fmt.Fprint(stdout, cfg.Option["SystemdScript"])
	if err := unitCanRun(systemd.ServiceUnit(), exe); err != nil {
		fmt.Fprintf(stderr, "npud service install: %v\n", err)
	}
	return 0
}

// noServiceManager is why there is no service manager to ask about npud
// (on Linux, PID 1 is not systemd: a container, WSL without systemd), or
// "". root is where /run (sd_booted's test) and /etc/init.d are looked for.
func noServiceManager(goos, root string) string {
	if goos != "linux" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(root, "run", "systemd", "system")); err == nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(root, "etc", "init.d", serviceName)); err == nil {
		return "" // installed as a System V service: its own status is the answer
	}
	return "no systemd: PID 1 is not systemd here (a container?), so there is no service; run npud serve directly"
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// serviceCommand runs one service-manager action.
func serviceCommand(action string, getenv func(string) string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		fmt.Fprintf(stderr, "npud service %s: cannot find the npud executable: %v\n", action, err)
		return 1
	}
	paths := defaultServicePaths(runtime.GOOS, getenv)
	svc, err := service.New(&serviceProgram{}, serviceConfig(exe, paths))
	if err != nil {
		fmt.Fprintf(stderr, "npud service %s: %v\n", action, err)
		return 1
	}
	if action == "status" {
		return printServiceStatus(svc, noServiceManager(runtime.GOOS, string(filepath.Separator)), stdout, stderr)
	}
	if action == "install" && svc.Platform() == "linux-systemd" {
		if err := unitCanRun(systemd.ServiceUnit(), exe); err != nil {
			fmt.Fprintf(stderr, "npud service install: %v\n", err)
			return 1
		}
	}
	if action == "install" {
		// The unit points at the configuration: without one the service
		// could not start.
		wrote, err := installServiceFiles(string(filepath.Separator), runtime.GOOS, paths)
		if err != nil {
			fmt.Fprintf(stderr, "npud service install: %v\n", err)
			return 1
		}
		for _, f := range wrote {
			fmt.Fprintf(stdout, "npud service install: wrote %s\n", f)
		}
	}
	if err := service.Control(svc, action); err != nil {
		fmt.Fprintf(stderr, "npud service %s (%s): %v\n", action, svc.Platform(), err)
		return 1
	}
	if action == "uninstall" && strings.HasSuffix(svc.Platform(), "systemv") {
		// kardianos removes the init script but not its rc?.d links.
		removed, err := removeSysVLinks(string(filepath.Separator), serviceName)
		for _, l := range removed {
			fmt.Fprintf(stdout, "npud service uninstall: removed %s\n", l)
		}
		if err != nil {
			fmt.Fprintf(stderr, "npud service uninstall: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "npud service %s: done (%s)\n", action, svc.Platform())
	return 0
}

// unitCanRun says whether the unit can start exe: its sandbox hides some
// folders from the service (ProtectHome=yes: /home, /root, /run/user;
// PrivateTmp=yes: an empty /tmp and /var/tmp of its own), so a binary
// there would fail at every start with "No such file or directory".
// Nothing is copied behind the operator's back: the error says how to.
func unitCanRun(unit, exe string) error {
	hidden := map[string][]string{
		"ProtectHome": {"/home", "/root", "/run/user"},
		"PrivateTmp":  {"/tmp", "/var/tmp"},
	}
	for _, line := range strings.Split(unit, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		dirs, known := hidden[key]
		// ProtectHome=read-only still lets the service read (and run) it.
		if !ok || !known || value == "no" || value == "false" || value == "read-only" {
			continue
		}
		for _, dir := range dirs {
			if exe == dir || strings.HasPrefix(exe, dir+"/") {
				return fmt.Errorf("the service cannot run %s: the unit's %s=%s hides %s from it, so it would fail at every start; "+
					"install the binary outside %s first, then install the service from there:\n"+
					"  sudo install -m 0755 %s /usr/local/bin/npud && sudo /usr/local/bin/npud service install",
					exe, key, value, dir, strings.Join(dirs, ", "), exe)
			}
		}
	}
	return nil
}

// installServiceFiles writes, under root, what the service needs besides
// its unit: the default configuration where none exists (an operator's is
// never touched), and on Windows the folders systemd would create
// (ConfigurationDirectory, StateDirectory, CacheDirectory). It returns
// what it wrote.
func installServiceFiles(root, goos string, p servicePaths) ([]string, error) {
	var wrote []string
	under := func(path string) string { return filepath.Join(root, path) }
	if goos == "windows" {
		for _, dir := range []string{filepath.Dir(p.config), p.models, p.cache} {
			if err := os.MkdirAll(under(dir), 0o750); err != nil {
				return wrote, err
			}
		}
	}
	config := under(p.config)
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		return wrote, err
	}
	// 0644 as the packages install it: the service's dynamic user reads
	// it. Keys belong in api-key-file (or the environment), not here.
	f, err := os.OpenFile(config, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return wrote, nil
	}
	if err != nil {
		return wrote, err
	}
	if _, err := io.WriteString(f, packaging.DefaultConfig()); err != nil {
		_ = f.Close()
		_ = os.Remove(config) // the half-written default; the write error is reported
		return wrote, err
	}
	if err := f.Close(); err != nil {
		return wrote, err
	}
	return append(wrote, p.config), nil
}

// removeSysVLinks removes, under root, the /etc/rc?.d links to
// /etc/init.d/NAME that a SysV install made, and nothing else. It returns
// what it removed.
func removeSysVLinks(root, name string) ([]string, error) {
	script := "/etc/init.d/" + name
	dirs, err := filepath.Glob(filepath.Join(root, "etc", "rc?.d"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			n := e.Name()
			if len(n) != 3+len(name) || (n[0] != 'S' && n[0] != 'K') || n[3:] != name || e.Type()&os.ModeSymlink == 0 {
				continue
			}
			link := filepath.Join(dir, n)
			if target, err := os.Readlink(link); err != nil || (target != script && filepath.Clean(filepath.Join(dir, target)) != filepath.Join(root, script)) {
				continue // someone else's link
			}
			if err := os.Remove(link); err != nil {
				errs = append(errs, err)
				continue
			}
			rel, _ := filepath.Rel(root, link)
			removed = append(removed, string(filepath.Separator)+rel)
		}
	}
	return removed, errors.Join(errs...)
}

// printServiceStatus answers like an LSB status action: 0 running, 3 not
// running, 4 unknown or not installed.
func printServiceStatus(svc service.Service, noManager string, stdout, stderr io.Writer) int {
	st, err := svc.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		fmt.Fprintf(stdout, "npud: not installed (%s)\n", svc.Platform())
		return 4
	case err != nil && noManager != "":
		// The init script's own "exit status 1" says nothing of why.
		fmt.Fprintf(stdout, "npud: not installed (%s)\n", noManager)
		return 4
	case err != nil:
		fmt.Fprintf(stderr, "npud service status (%s): %v\n", svc.Platform(), err)
		return 4
	case st == service.StatusRunning:
		fmt.Fprintln(stdout, "npud: running")
		return 0
	case st == service.StatusStopped:
		fmt.Fprintln(stdout, "npud: stopped")
		return 3
	}
	fmt.Fprintln(stdout, "npud: status unknown")
	return 4
}

// serviceProgram runs `npud serve` under the Windows service manager,
// which calls Start and Stop instead of sending signals.
type serviceProgram struct {
	run    func(ctx context.Context) int
	cancel context.CancelFunc
	done   chan int
	mu     sync.Mutex
}

func (p *serviceProgram) Start(service.Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan int, 1)
	go func() { p.done <- p.run(ctx) }()
	return nil
}

// Stop starts the drain and waits for it, as SIGTERM does.
func (p *serviceProgram) Stop(service.Service) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			return fmt.Errorf("npud stopped with exit code %d", code)
		}
		return nil
	case <-time.After(2 * time.Minute):
		return errors.New("npud did not stop within 2 minutes")
	}
}

// runUnderServiceManager reports whether npud was started by the Windows
// service manager, and then runs serve through it.
func runUnderServiceManager(run func(ctx context.Context) int) (int, bool) {
	if runtime.GOOS != "windows" || service.Interactive() {
		return 0, false
	}
	prog := &serviceProgram{run: run}
	svc, err := service.New(prog, &service.Config{Name: serviceName})
	if err != nil {
		return 1, true
	}
	if err := svc.Run(); err != nil {
		return 1, true
	}
	return 0, true
}
