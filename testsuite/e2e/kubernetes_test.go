package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// The parts of the Kubernetes objects the checks read.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Template struct {
			Metadata struct {
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// readK8s reads every object of the YAML files of dir.
func readK8s(t *testing.T, dir string) []k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var out []k8sObject
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(mustRead(t, f)))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			out = append(out, o)
		}
	}
	return out
}

// secretish is an environment variable name that holds a secret.
var secretish = regexp.MustCompile(`KEY|SECRET|TOKEN|PASSWORD|PASSWD`)

// TestKubernetesManifestsRunTheImageTheDockerfileBuilds checks, without a
// cluster or a Docker engine, what kubeconform cannot (make kubelint
// validates the objects' schema): the manifests run the image the
// Dockerfile builds through its entrypoint, with a subcommand and flags
// the overseer binary has; every probe asks a path the command serves, on
// a port the container declares; every container has resources; secrets
// come only from Secret objects; and the Temporal connection comes from
// the environment variables the SDK's envconfig reads.
func TestKubernetesManifestsRunTheImageTheDockerfileBuilds(t *testing.T) {
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	base := filepath.Join(root, "deploy", "kubernetes", "base")

	// The image: the kustomization names it as the Dockerfile's usage line
	// and the compose file tag it.
	var kust struct {
		Resources []string `yaml:"resources"`
		Images    []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
		} `yaml:"images"`
	}
	require.NoError(t, yaml.Unmarshal(mustRead(t, filepath.Join(base, "kustomization.yaml")), &kust))
	require.Len(t, kust.Images, 1)
	img := kust.Images[0]
	assert.Empty(t, img.NewName, "the image keeps the Dockerfile's name; a registry is an overlay's")
	df := string(mustRead(t, filepath.Join(root, "Dockerfile")))
	assert.Contains(t, df, "docker build -t "+img.Name+" .", "the Dockerfile's usage line builds the image the manifests name")
	assert.Contains(t, df, `ENTRYPOINT ["/usr/local/bin/overseer"]`)
	assert.Contains(t, df, "go build -trimpath -ldflags=\"-s -w\" -o /out/overseer ./cmd/overseer")
	assert.Contains(t, df, "USER nonroot:nonroot", "the manifests' runAsUser 65532 is the distroless nonroot user")
	assert.Contains(t, string(mustRead(t, filepath.Join(root, "docker-compose.yml"))), "image: "+img.Name+":"+img.NewTag,
		"the compose file builds the same name and tag")
	files, _ := filepath.Glob(filepath.Join(base, "*.yaml"))
	for _, f := range files {
		if n := filepath.Base(f); n != "kustomization.yaml" {
			assert.Contains(t, kust.Resources, n, "the kustomization lists %s", n)
		}
	}

	objs := readK8s(t, base)
	// Probe paths each command serves.
	served := map[string][]string{
		"worker":    {"/metrics"},
		"dashboard": {"/healthz"},
		"judge":     {jevhttp.HealthPath, jevhttp.ReadyPath},
	}
	// Environment variables the overseer reads (worker/judge.go, notify,
	// cmd/overseer/cli: OVERSEER_DASHBOARD_URL is the CLI's envDashboardURL).
	overseerEnv := []string{worker.EnvJudge, worker.EnvJevURL, worker.EnvJevAPIKey, worker.EnvServeAPIKey, worker.EnvOpenAIAPIKey,
		notify.EnvWebhookURL, notify.EnvWebhookSecret, notify.EnvSlackWebhookURL, notify.EnvSlackEscalationURL,
		cli.OIDCClientSecretEnv, cli.DashboardSessionKeyEnv, "OVERSEER_DASHBOARD_URL"}
	configMaps := map[string]map[string]string{}
	deployments := map[string]bool{}
	for _, o := range objs {
		require.NotEqual(t, "Secret", o.Kind, "%s: no Secret in the manifests: secrets are created apart, never written here", o.Metadata.Name)
		if o.Kind == "ConfigMap" {
			configMaps[o.Metadata.Name] = o.Data
		}
	}
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		pod := o.Spec.Template.Spec
		require.Len(t, pod.Containers, 1, o.Metadata.Name)
		c := pod.Containers[0]
		t.Run(o.Metadata.Name, func(t *testing.T) {
			assert.Equal(t, img.Name, c.Image, "the image the kustomization sets")
			assert.Empty(t, c.Command, "the Dockerfile's entrypoint runs (args only)")
			require.NotEmpty(t, c.Args)
			sub := c.Args[0]
			require.Contains(t, served, sub, "a command of the overseer binary")
			deployments[sub] = true
			// Every flag is one the command has: its -h lists it.
			cmdArgs := c.Args[:1]
			if sub == "judge" {
				require.Equal(t, "serve", c.Args[1])
				cmdArgs = c.Args[:2]
			}
			var out, errOut bytes.Buffer
			cli.Main(context.Background(), append(slices.Clone(cmdArgs), "-h"), &out, &errOut)
			help := out.String() + errOut.String()
			for _, a := range c.Args[len(cmdArgs):] {
				if strings.HasPrefix(a, "-") {
					name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
					// A bool flag's line ends at its name, another's has its type.
					assert.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(name)+`(\s|$)`, help, "overseer %s has --%s", strings.Join(cmdArgs, " "), name)
				}
			}
			ports := map[string]int{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			for what, p := range map[string]*k8sProbe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				require.NotNil(t, p, "%s probe", what)
				require.NotNil(t, p.HTTPGet, "%s probe", what)
				assert.Contains(t, served[sub], p.HTTPGet.Path, "%s probe asks a path overseer %s serves", what, sub)
				assert.Contains(t, ports, p.HTTPGet.Port, "%s probe's port is declared", what)
			}
			// The listen address in the args is the declared port, on every
			// interface of the pod.
			for i, a := range c.Args {
				if (a == "--listen" || a == "--metrics") && i+1 < len(c.Args) {
					var declared []string
					for _, p := range ports {
						declared = append(declared, "0.0.0.0:"+strconv.Itoa(p))
					}
					assert.Contains(t, declared, c.Args[i+1], "%s listens on a declared port", a)
				}
			}
			if sub == "dashboard" {
				assertPassesFlagChecks(t, c.Args)
			}
			if sub == "worker" {
				ann := o.Spec.Template.Metadata.Annotations
				assert.Equal(t, "true", ann["prometheus.io/scrape"])
				assert.Equal(t, strconv.Itoa(ports["metrics"]), ann["prometheus.io/port"])
				assert.Equal(t, "/metrics", ann["prometheus.io/path"])
			}
			assert.NotEmpty(t, c.Resources.Requests["cpu"], "cpu request")
			assert.NotEmpty(t, c.Resources.Requests["memory"], "memory request")
			assert.NotEmpty(t, c.Resources.Limits["memory"], "memory limit")
			for _, e := range c.Env {
				if secretish.MatchString(e.Name) {
					assert.Empty(t, e.Value, "%s is never written inline", e.Name)
					require.NotNil(t, e.ValueFrom, "%s comes from a Secret", e.Name)
					assert.NotNil(t, e.ValueFrom.SecretKeyRef, "%s comes from a Secret", e.Name)
				}
				if strings.HasPrefix(e.Name, "OVERSEER_") {
					assert.Contains(t, overseerEnv, e.Name, "a variable the overseer reads")
				}
				if e.Name == worker.EnvJevURL {
					// The judge service's Service, port and decide path.
					assert.Equal(t, "http://overseer-judge:8088"+jevhttp.DecidePath, e.Value)
					assert.True(t, slices.ContainsFunc(objs, func(o k8sObject) bool { return o.Kind == "Service" && o.Metadata.Name == "overseer-judge" }),
						"a Service overseer-judge")
				}
			}
			if sub == "worker" || sub == "dashboard" {
				// The Temporal connection: the ConfigMap's variables, read by
				// the SDK's envconfig as the binary reads them.
				require.Len(t, c.EnvFrom, 1)
				require.NotNil(t, c.EnvFrom[0].ConfigMapRef)
				data := configMaps[c.EnvFrom[0].ConfigMapRef.Name]
				require.NotEmpty(t, data, "the ConfigMap %s", c.EnvFrom[0].ConfigMapRef.Name)
				for k, v := range data {
					t.Setenv(k, v)
				}
				t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml")) // no profile of this machine's
				opts, err := worker.Config{}.ClientOptions()
				require.NoError(t, err)
				assert.Equal(t, data["TEMPORAL_ADDRESS"], opts.HostPort, "the SDK reads TEMPORAL_ADDRESS")
				assert.Equal(t, data["TEMPORAL_NAMESPACE"], opts.Namespace, "the SDK reads TEMPORAL_NAMESPACE")
			}
		})
	}
	assert.Len(t, deployments, 3, "the worker, the dashboard and the judge service: %v", deployments)

	// The TLS component sets the SDK's TLS variables, to files of the Secret
	// it mounts.
	tls := string(mustRead(t, filepath.Join(root, "deploy", "kubernetes", "components", "temporal-tls", "tls.yaml")))
	for _, v := range []string{"TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"} {
		assert.Contains(t, tls, "name: "+v+",")
	}
	assert.Contains(t, tls, "secretName: overseer-temporal-tls")
}
