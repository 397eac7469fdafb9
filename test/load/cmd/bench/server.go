package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modwright/modwright/test/load"
)

// server is one server process under test.
type server struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	certDir string
	base    string // https://127.0.0.1:PORT
	started time.Time
	// ready is the time from the process' start to the first 200 of /readyz.
	ready  time.Duration
	client *http.Client // trusts the server's CA once ready
	exited chan struct{}
	err    error // the process' exit error, once exited is closed
}

// freePort asks the kernel for a free TCP port on the loopback interface.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts the binary with args (the port and the cert dir are
// passed by portFlag and certFlag) in a fresh directory under dir, and waits
// for /readyz.
func startServer(ctx context.Context, name, dir, bin string, args, environ []string, portFlag, certFlag string) (*server, error) {
	runDir, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{
		name:    name,
		logPath: filepath.Join(runDir, "server.log"),
		certDir: filepath.Join(runDir, "certs"),
		base:    "https://127.0.0.1:" + strconv.Itoa(port),
		exited:  make(chan struct{}),
	}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args = append(append([]string{}, args...), portFlag, strconv.Itoa(port), certFlag, s.certDir)
	s.cmd = exec.Command(bin, args...)
	if len(environ) > 0 {
		s.cmd.Env = append(os.Environ(), environ...)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, 90*time.Second); err != nil {
		s.kill()
		return nil, fmt.Errorf("%s (%s): %w\n%s", name, strings.Join(s.cmd.Args, " "), err, tail(s.logPath, 20))
	}
	return s, nil
}

// waitReady polls /readyz every few milliseconds.
func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := s.started.Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("exited before ready: %v", s.err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if s.client == nil {
			if roots, err := load.LoadCA(filepath.Join(s.certDir, "ca.crt")); err == nil {
				s.client = load.NewClient(roots)
				s.client.Timeout = time.Second
			}
		}
		if s.client != nil {
			resp, err := s.client.Get(s.base + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					s.ready = time.Since(s.started)
					s.client.Timeout = 30 * time.Second
					return nil
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v", limit)
}

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// running reports an error when the process has exited.
func (s *server) running() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited during the run: %v\n%s", s.name, s.err, tail(s.logPath, 20))
	default:
		return nil
	}
}

// stop sends SIGTERM and waits; the process must exit cleanly within 15s.
func (s *server) stop() error {
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	select {
	case <-s.exited:
		return fmt.Errorf("%s had exited before the stop: %v\n%s", s.name, s.err, tail(s.logPath, 20))
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.kill()
		return fmt.Errorf("%s did not stop within 15s of SIGTERM\n%s", s.name, tail(s.logPath, 20))
	}
	if s.err != nil {
		return fmt.Errorf("%s: exit after SIGTERM: %v\n%s", s.name, s.err, tail(s.logPath, 20))
	}
	return nil
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
