package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"gopkg.in/yaml.v3"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// No Docker engine runs here: these tests check docker-compose.yml, its
// support files and the Dockerfile statically, against the code.

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	// XOverseer is the anchor the overseer services merge in.
	XOverseer map[string]any `yaml:"x-overseer"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Expose      []string          `yaml:"expose"`
	Volumes     []string          `yaml:"volumes"`
	Restart     string            `yaml:"restart"`
	Init        bool              `yaml:"init"`
	Healthcheck map[string]any    `yaml:"healthcheck"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

func loadCompose(t *testing.T) (composeFile, string) {
	t.Helper()
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var c composeFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a misspelt key is an error, not a silent no-op
	require.NoError(t, dec.Decode(&c), "docker-compose.yml must parse")
	return c, root
}

var interpolation = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}`)

// env returns a service's environment value as compose would with no .env
// file: ${VAR:-default} becomes default.
func env(s composeService, key string) string {
	return interpolation.ReplaceAllString(s.Environment[key], "$2")
}

// containerPorts are the ports a service listens on inside the network:
// its expose list and the container side of its port mappings.
func containerPorts(s composeService) []string {
	ports := slices.Clone(s.Expose)
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		ports = append(ports, parts[len(parts)-1])
	}
	return ports
}

// hostPort returns the host side of a service's mapping of containerPort.
func hostPort(t *testing.T, s composeService, containerPort string) (host, port string) {
	t.Helper()
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		if len(parts) == 3 && parts[2] == containerPort {
			return parts[0], parts[1]
		}
	}
	t.Fatalf("no host mapping of container port %s in %v", containerPort, s.Ports)
	return "", ""
}

// flagValue returns the value after --name in a command line.
func flagValue(cmd []string, name string) string {
	for i, a := range cmd {
		if (a == "--"+name || a == "-"+name) && i+1 < len(cmd) {
			return cmd[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func splitHostPort(t *testing.T, hp string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(hp)
	require.NoError(t, err, hp)
	return h, p
}

func TestComposeServices(t *testing.T) {
	c, root := loadCompose(t)
	for _, name := range []string{"postgresql", "temporal-schema", "temporal", "temporal-admin", "temporal-ui", "judge", "worker", "dashboard"} {
		t.Run(name, func(t *testing.T) {
			s, ok := c.Services[name]
			require.True(t, ok, "service %s is missing", name)
			assert.NotEmpty(t, s.Image, "every service names its image")
			for dep := range s.DependsOn {
				assert.Contains(t, c.Services, dep, "%s depends on a service that does not exist", name)
			}
			for _, v := range s.Volumes {
				src, _, _ := strings.Cut(v, ":")
				if strings.HasPrefix(src, "./") {
					_, err := os.Stat(filepath.Join(root, src))
					assert.NoError(t, err, "bind-mounted %s", src)
				} else {
					assert.Contains(t, c.Volumes, src, "named volume %s is declared", src)
				}
			}
			for _, p := range s.Ports {
				assert.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %s beyond loopback", name, p)
			}
		})
	}
	worker := c.Services["worker"]
	assert.Equal(t, "service_completed_successfully", worker.DependsOn["temporal-admin"].Condition,
		"the worker starts once the search attributes are registered")
	assert.Contains(t, worker.DependsOn, "judge")
	assert.Equal(t, "no", c.Services["temporal-admin"].Restart, "the admin step runs once")
	assert.Equal(t, "no", c.Services["temporal-schema"].Restart, "the schema step runs once")
	assert.Equal(t, "service_completed_successfully", c.Services["temporal"].DependsOn["temporal-schema"].Condition,
		"the server starts on the databases the schema step set up")
}

func TestComposeAddressesAgree(t *testing.T) {
	c, _ := loadCompose(t)
	temporalSvc, pg := c.Services["temporal"], c.Services["postgresql"]

	// Everything that talks to Temporal points at the temporal service's
	// frontend port.
	for _, name := range []string{"temporal-admin", "temporal-ui", "worker", "dashboard"} {
		t.Run(name+" → temporal", func(t *testing.T) {
			host, port := splitHostPort(t, env(c.Services[name], "TEMPORAL_ADDRESS"))
			assert.Equal(t, "temporal", host)
			assert.Equal(t, "7233", port)
			assert.Contains(t, containerPorts(temporalSvc), port)
			if ns := env(c.Services[name], "TEMPORAL_NAMESPACE"); ns != "" {
				// The admin step creates it.
				assert.Equal(t, env(c.Services["temporal-admin"], "TEMPORAL_NAMESPACE"), ns)
			}
		})
	}

	for _, name := range []string{"temporal-schema", "temporal"} {
		t.Run(name+" → postgresql", func(t *testing.T) {
			s := c.Services[name]
			assert.Equal(t, "postgresql", env(s, "POSTGRES_SEEDS"))
			assert.Contains(t, containerPorts(pg), env(s, "DB_PORT"))
			assert.Equal(t, env(pg, "POSTGRES_USER"), env(s, "POSTGRES_USER"))
			assert.Equal(t, env(pg, "POSTGRES_PASSWORD"), env(s, "POSTGRES_PWD"))
		})
	}

	t.Run("worker → judge", func(t *testing.T) {
		judge := c.Services["judge"]
		w := c.Services["worker"]
		assert.Equal(t, "jev", env(w, worker.EnvJudge), "the worker asks the judge service, not its own heuristic")
		u, err := url.Parse(env(w, worker.EnvJevURL))
		require.NoError(t, err)
		assert.Equal(t, "judge", u.Hostname())
		assert.Equal(t, jevhttp.DecidePath, u.Path)
		_, listen := splitHostPort(t, flagValue(judge.Command, "listen"))
		assert.Equal(t, listen, u.Port())
		assert.Contains(t, containerPorts(judge), listen)
	})

	t.Run("worker metrics", func(t *testing.T) {
		w := c.Services["worker"]
		_, port := splitHostPort(t, flagValue(w.Command, "metrics"))
		host, _ := hostPort(t, w, port)
		assert.Equal(t, "127.0.0.1", host)
	})

	t.Run("dashboard", func(t *testing.T) {
		d, ui := c.Services["dashboard"], c.Services["temporal-ui"]
		_, port := splitHostPort(t, flagValue(d.Command, "listen"))
		hostPort(t, d, port)
		// Its links to the Temporal UI go to the UI's published port.
		u, err := url.Parse(flagValue(d.Command, "temporal-ui"))
		require.NoError(t, err)
		_, uiHostPort := hostPort(t, ui, env(ui, "TEMPORAL_UI_PORT"))
		assert.Equal(t, uiHostPort, u.Port())
		assert.Equal(t, "localhost", u.Hostname())
		assertPassesFlagChecks(t, d.Command)
	})
}

// assertPassesFlagChecks: `overseer ARGS` gets past its flag checks (a
// dashboard beyond loopback without a sign-in is refused unless
// --insecure). With a cancelled context it stops at connecting to
// Temporal, exit 1; a refused flag is a usage error, exit 2.
func assertPassesFlagChecks(t *testing.T, args []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := cli.Main(ctx, args, &out, &errOut)
	assert.NotEqual(t, 2, code, "overseer %s is refused: %s", strings.Join(args, " "), errOut.String())
}

// TestComposeVersionsMatchDevServer checks that the cluster runs the Temporal
// release of the embedded dev server (Temporal CLI v1.5.1).
func TestComposeVersionsMatchDevServer(t *testing.T) {
	c, _ := loadCompose(t)
	tag := func(name string) string {
		_, tag, ok := strings.Cut(c.Services[name].Image, ":")
		require.True(t, ok, "%s pins a tag", name)
		return tag
	}
	assert.Regexp(t, `^1\.29\.\d+$`, tag("temporal"))
	assert.True(t, strings.HasPrefix(tag("temporal-admin"), tag("temporal")+"-"), "admin tools of the same release")
	exe, err := testsuite.TemporalCLIPath()
	if err != nil {
		t.Skipf("no Temporal CLI to compare versions with: %v", err)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	require.NoError(t, err)
	m := regexp.MustCompile(`Server ([0-9.]+), UI ([0-9.]+)`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "temporal --version: %s", out)
	assert.Equal(t, m[1], tag("temporal"), "the server release of the dev server")
	assert.Equal(t, m[2], tag("temporal-ui"), "the UI release of the dev server")
}

// composeSearchAttributes parses the admin step's NAME=Type pairs.
func composeSearchAttributes(t *testing.T, c composeFile) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, pair := range strings.Fields(env(c.Services["temporal-admin"], "OVERSEER_SEARCH_ATTRIBUTES")) {
		name, typ, ok := strings.Cut(pair, "=")
		require.True(t, ok, pair)
		got[name] = typ
	}
	return got
}

func TestComposeRegistersTheOverseerSearchAttributes(t *testing.T) {
	c, _ := loadCompose(t)
	got := composeSearchAttributes(t, c)
	want := map[string]string{}
	for _, k := range []temporal.SearchAttributeKey{
		overseer.SearchAttributeStatus, overseer.SearchAttributeOnObjective, overseer.SearchAttributePaused, overseer.SearchAttributeGateSince,
		overseer.SearchAttributeBudget,
	} {
		// IndexedValueType's String() is the CLI's type name: Keyword, Double, Bool, Datetime.
		want[k.GetName()] = k.GetValueType().String()
	}
	assert.Equal(t, want, got, "what the plugin upserts")
	dev := map[string]string{}
	for name, typ := range testsuite.OverseerSearchAttributes {
		dev[name] = typ.String()
	}
	assert.Equal(t, dev, got, "what the dev server registers")
}

// TestComposeAdminStepScript runs the admin step's script with a stand-in
// temporal CLI that records its arguments, on a cluster without the
// namespace yet.
func TestComposeAdminStepScript(t *testing.T) {
	c, root := loadCompose(t)
	admin := c.Services["temporal-admin"]
	require.Equal(t, []string{"/bin/sh", "/deploy/register-search-attributes.sh"}, admin.Entrypoint)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	created := filepath.Join(bin, "namespace-created")
	// The namespace is described only once it was created.
	fake := "#!/bin/sh\necho \"$@\" >> " + log + "\n" +
		"case \"$*\" in\n" +
		"\"operator namespace describe\"*) [ -f " + created + " ] || exit 1 ;;\n" +
		"\"operator namespace create\"*) touch " + created + " ;;\n" +
		"esac\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "temporal"), []byte(fake), 0o755))
	cmd := exec.CommandContext(context.Background(), sh, filepath.Join(root, "deploy", "register-search-attributes.sh"))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	for k := range admin.Environment {
		cmd.Env = append(cmd.Env, k+"="+env(admin, k))
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(calls), "operator cluster health --address temporal:7233\n", "it waits for the frontend")
	assert.Contains(t, string(calls), "operator namespace create --address temporal:7233 --namespace default\n")
	for name, typ := range composeSearchAttributes(t, c) {
		assert.Contains(t, string(calls), "operator search-attribute create --address temporal:7233 --namespace default --name "+name+" --type "+typ)
	}
}

// TestComposeOverseerServices checks that the overseer services run the
// image the Dockerfile builds, with subcommands and flags the binary has.
func TestComposeOverseerServices(t *testing.T) {
	c, root := loadCompose(t)
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mustRead(t, filepath.Join(root, "go.mod")))
	require.NotNil(t, goVersion)
	df := string(dockerfile)
	assert.Contains(t, df, "FROM golang:"+string(goVersion[1])+" AS build", "the builder uses go.mod's Go")
	assert.Contains(t, df, "go build")
	assert.Contains(t, df, "./cmd/overseer")
	assert.Regexp(t, `(?m)^FROM gcr\.io/distroless/\S+|^FROM debian:\S+-slim`, df)
	assert.Contains(t, df, `ENTRYPOINT ["/usr/local/bin/overseer"]`)

	commands := cli.Commands()
	for _, name := range []string{"judge", "worker", "dashboard"} {
		t.Run(name, func(t *testing.T) {
			s := c.Services[name]
			assert.Equal(t, ".", s.Build, "built from the Dockerfile")
			require.NotEmpty(t, s.Command)
			sub := s.Command[0]
			require.Contains(t, commands, sub, "overseer has the subcommand")
			args := s.Command[1:]
			if sub == "judge" {
				args = args[1:] // judge serve
				sub = "judge " + s.Command[1]
			}
			var out, errOut bytes.Buffer
			help := append(strings.Fields(sub), "-h")
			assert.Equal(t, 0, cli.Main(context.Background(), help, &out, &errOut), errOut.String())
			for _, a := range args {
				if f, ok := strings.CutPrefix(a, "--"); ok {
					f, _, _ = strings.Cut(f, "=")
					// A bool flag's line ends at its name, another's has its type.
					assert.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(f)+`(\s|$)`, out.String(), "overseer %s has --%s", sub, f)
				}
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// serverConfig is the part of the Temporal server's configuration that
// compose and make cluster must agree on.
type serverConfig struct {
	Persistence struct {
		NumHistoryShards int    `yaml:"numHistoryShards"`
		DefaultStore     string `yaml:"defaultStore"`
		VisibilityStore  string `yaml:"visibilityStore"`
		Datastores       map[string]struct {
			SQL *struct {
				PluginName   string `yaml:"pluginName"`
				DatabaseName string `yaml:"databaseName"`
				ConnectAddr  string `yaml:"connectAddr"`
				User         string `yaml:"user"`
				Password     string `yaml:"password"`
			} `yaml:"sql"`
		} `yaml:"datastores"`
	} `yaml:"persistence"`
	Services map[string]struct {
		RPC struct {
			GRPCPort int    `yaml:"grpcPort"`
			BindOnIP string `yaml:"bindOnIP"`
		} `yaml:"rpc"`
	} `yaml:"services"`
	DynamicConfigClient struct {
		Filepath string `yaml:"filepath"`
	} `yaml:"dynamicConfigClient"`
}

// renderServerConfig renders deploy/temporal/overseer.yaml the way the
// Temporal server does (a Go template; env reads environ), with the few
// sprig functions it uses. A function this does not know fails the test:
// add it here when the template starts using it.
func renderServerConfig(t *testing.T, root string, environ map[string]string) serverConfig {
	t.Helper()
	data := mustRead(t, filepath.Join(root, "deploy", "temporal", "overseer.yaml"))
	require.Contains(t, strings.SplitN(string(data), "\n", 2)[0], "enable-template", "the server renders the file only with this comment on top")
	funcs := template.FuncMap{
		"env": func(k string) string { return environ[k] },
		"default": func(d any, given ...any) any {
			if len(given) == 0 || given[0] == nil || given[0] == "" {
				return d
			}
			return given[0]
		},
		"quote": func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"fail":  func(msg string) (string, error) { return "", errors.New(msg) },
	}
	tpl, err := template.New("overseer.yaml").Funcs(funcs).Parse(string(data))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, tpl.Execute(&out, nil))
	var cfg serverConfig
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &cfg), out.String())
	return cfg
}

// clusterScriptEnv is the environment scripts/cluster.sh runs the server
// with (scripts/cluster.sh env), for the port offset given.
func clusterScriptEnv(t *testing.T, root, offset string) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "cluster.sh"), "env")
	cmd.Env = append(os.Environ(), "OVERSEER_CLUSTER_PORT_OFFSET="+offset)
	out, err := cmd.Output()
	require.NoError(t, err)
	environ := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, line)
		environ[k] = v
	}
	return environ
}

// shellDefault returns the default a POSIX script gives a variable with
// : "${NAME:=default}".
func shellDefault(t *testing.T, script, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^: "\$\{` + name + `:=([^}]*)\}"`).FindStringSubmatch(script)
	require.NotNil(t, m, "no default for %s", name)
	return m[1]
}

// TestComposeAndMakeClusterRunOneServerSetup checks that docker-compose.yml
// and scripts/cluster.sh (make cluster, what CI tests) run the same Temporal
// release with the same configuration, schema step and admin step.
func TestComposeAndMakeClusterRunOneServerSetup(t *testing.T) {
	c, root := loadCompose(t)
	script := string(mustRead(t, filepath.Join(root, "scripts", "cluster.sh")))
	startScript := string(mustRead(t, filepath.Join(root, "deploy", "start-temporal.sh")))
	schemaScript := string(mustRead(t, filepath.Join(root, "deploy", "setup-schema.sh")))
	temporalSvc, pg := c.Services["temporal"], c.Services["postgresql"]

	t.Run("the steps", func(t *testing.T) {
		for svc, step := range map[string]string{"temporal-schema": "setup-schema.sh", "temporal": "start-temporal.sh", "temporal-admin": "register-search-attributes.sh"} {
			s := c.Services[svc]
			assert.Equal(t, []string{"/bin/sh", "/deploy/" + step}, s.Entrypoint, svc)
			assert.Contains(t, s.Volumes, "./deploy/"+step+":/deploy/"+step+":ro", svc)
			assert.Contains(t, script, `"$ROOT/deploy/`+step+`"`, "scripts/cluster.sh runs deploy/%s too", step)
		}
		// The server's configuration directory is where compose mounts it,
		// and scripts/cluster.sh points the same script at deploy/temporal.
		assert.Contains(t, temporalSvc.Volumes, "./deploy/temporal:"+shellDefault(t, startScript, "OVERSEER_SERVER_CONFIG")+":ro")
		assert.Contains(t, script, `OVERSEER_SERVER_CONFIG=$ROOT/deploy/temporal`)
		assert.Contains(t, startScript, "--env overseer", "the file is overseer.yaml")
	})

	t.Run("versions", func(t *testing.T) {
		image, tag, _ := strings.Cut(temporalSvc.Image, ":")
		assert.Equal(t, "temporalio/server", image)
		mod := string(mustRead(t, filepath.Join(root, "scripts", "cluster", "go.mod")))
		assert.Regexp(t, `(?m)^\s+go\.temporal\.io/server v`+regexp.QuoteMeta(tag)+`$`, mod, "make cluster builds the release compose runs")
		assert.Regexp(t, `(?m)^\s+github\.com/temporalio/cli `+regexp.QuoteMeta(testsuite.TemporalCLIVersion)+`$`, mod,
			"built with the dependencies of the pinned Temporal CLI")
		assert.Contains(t, script, `TEMPORAL_SERVER_VERSION="v`+tag+`"`)
		// The schema step's tool, hence its embedded schema, is of the same
		// release on both sides.
		assert.Equal(t, c.Services["temporal-admin"].Image, c.Services["temporal-schema"].Image)
		assert.True(t, strings.HasPrefix(c.Services["temporal-schema"].Image, "temporalio/admin-tools:"+tag+"-"))
		assert.Equal(t, "postgres:15", pg.Image, "the PostgreSQL release make cluster runs (Debian 12's)")
	})

	composeEnv := map[string]string{"BIND_ON_IP": "172.18.0.3"}
	for k := range temporalSvc.Environment {
		composeEnv[k] = env(temporalSvc, k)
	}
	composeCfg := renderServerConfig(t, root, composeEnv)
	clusterEnv := clusterScriptEnv(t, root, "20000")
	clusterCfg := renderServerConfig(t, root, clusterEnv)

	t.Run("one configuration", func(t *testing.T) {
		for name, cfg := range map[string]serverConfig{"compose": composeCfg, "make cluster": clusterCfg} {
			p := cfg.Persistence
			assert.GreaterOrEqual(t, p.NumHistoryShards, 4, "%s: several history shards", name)
			for _, store := range []string{p.DefaultStore, p.VisibilityStore} {
				ds := p.Datastores[store]
				require.NotNil(t, ds.SQL, "%s: store %q is SQL (visibility too: no Elasticsearch)", name, store)
				assert.Equal(t, "postgres12", ds.SQL.PluginName, name)
			}
			for _, svc := range []string{"frontend", "history", "matching", "worker"} {
				assert.Contains(t, cfg.Services, svc, "%s: all services in one process", name)
			}
		}
		assert.Equal(t, composeCfg.Persistence.NumHistoryShards, clusterCfg.Persistence.NumHistoryShards)
	})

	t.Run("compose's addresses", func(t *testing.T) {
		p := composeCfg.Persistence
		for _, store := range []string{p.DefaultStore, p.VisibilityStore} {
			sql := p.Datastores[store].SQL
			host, port := splitHostPort(t, sql.ConnectAddr)
			assert.Equal(t, "postgresql", host)
			assert.Contains(t, containerPorts(pg), port)
			assert.Equal(t, env(pg, "POSTGRES_USER"), sql.User)
			assert.Equal(t, env(pg, "POSTGRES_PASSWORD"), sql.Password)
		}
		// The databases the schema step creates.
		assert.Equal(t, shellDefault(t, schemaScript, "DBNAME"), p.Datastores[p.DefaultStore].SQL.DatabaseName)
		assert.Equal(t, shellDefault(t, schemaScript, "VISIBILITY_DBNAME"), p.Datastores[p.VisibilityStore].SQL.DatabaseName)
		fe := composeCfg.Services["frontend"].RPC
		assert.Contains(t, containerPorts(temporalSvc), strconv.Itoa(fe.GRPCPort))
		assert.Equal(t, "172.18.0.3", fe.BindOnIP)
		// The dynamic configuration is a file compose mounts.
		mounted := false
		for _, v := range temporalSvc.Volumes {
			src, rest, _ := strings.Cut(v, ":")
			dst, _, _ := strings.Cut(rest, ":")
			if rel, ok := strings.CutPrefix(composeCfg.DynamicConfigClient.Filepath, dst+"/"); ok {
				_, err := os.Stat(filepath.Join(root, src, rel))
				assert.NoError(t, err)
				mounted = true
			}
		}
		assert.True(t, mounted, "%s is mounted", composeCfg.DynamicConfigClient.Filepath)
	})

	t.Run("make cluster's addresses", func(t *testing.T) {
		p := clusterCfg.Persistence
		for _, store := range []string{p.DefaultStore, p.VisibilityStore} {
			assert.Equal(t, "127.0.0.1:"+clusterEnv["DB_PORT"], p.Datastores[store].SQL.ConnectAddr)
		}
		for name, svc := range clusterCfg.Services {
			assert.Equal(t, "127.0.0.1", svc.RPC.BindOnIP, "%s on loopback", name)
		}
		assert.Equal(t, 27233, clusterCfg.Services["frontend"].RPC.GRPCPort, "Temporal's port plus the offset: never the dev server's 7233")
		assert.Equal(t, filepath.Join(root, "deploy", "dynamicconfig", "development-sql.yaml"), clusterCfg.DynamicConfigClient.Filepath)
		assert.Equal(t, filepath.Base(composeCfg.DynamicConfigClient.Filepath), filepath.Base(clusterCfg.DynamicConfigClient.Filepath),
			"the same dynamic configuration")
	})

	t.Run("search attributes", func(t *testing.T) {
		m := regexp.MustCompile(`(?m)^SEARCH_ATTRIBUTES="([^"]*)"`).FindStringSubmatch(script)
		require.NotNil(t, m)
		assert.Equal(t, env(c.Services["temporal-admin"], "OVERSEER_SEARCH_ATTRIBUTES"), m[1])
	})
}

// TestComposeSchemaStepScript runs the schema step's script with a
// stand-in temporal-sql-tool that records its arguments and password.
func TestComposeSchemaStepScript(t *testing.T) {
	c, root := loadCompose(t)
	schema := c.Services["temporal-schema"]
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	fake := "#!/bin/sh\necho \"$SQL_PASSWORD | $*\" >> " + log + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "temporal-sql-tool"), []byte(fake), 0o755))
	cmd := exec.CommandContext(context.Background(), sh, filepath.Join(root, "deploy", "setup-schema.sh"))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	// A password that is none of the other words (the default is the
	// user's name), as a .env file would set.
	const pw = "pw-from-dot-env-5e1f"
	for k := range schema.Environment {
		v := env(schema, k)
		if k == "POSTGRES_PWD" {
			v = pw
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	calls := string(mustRead(t, log))
	conn := pw + " | --plugin postgres12 --endpoint postgresql --port 5432 --user temporal --database "
	for db, name := range map[string]string{"temporal": "postgresql/v12/temporal", "temporal_visibility": "postgresql/v12/visibility"} {
		assert.Contains(t, calls, conn+db+" create-database\n")
		assert.Contains(t, calls, conn+db+" setup-schema --version 0.0\n")
		assert.Contains(t, calls, conn+db+" update-schema --schema-name "+name+"\n")
		// The tool's embedded schema is the release's versioned directory.
		if dir := moduleDir(t, "go.temporal.io/server@v1.29.1"); dir != "" {
			_, err := os.Stat(filepath.Join(dir, "schema", name, "versioned"))
			assert.NoError(t, err)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(calls), "\n") {
		_, args, _ := strings.Cut(line, " | ")
		assert.NotContains(t, args, pw, "the password is not on the command line")
	}
}

// moduleDir returns the module cache directory of module@version, or ""
// when it is not in the cache.
func moduleDir(t *testing.T, modVersion string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), modVersion)
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}
