// Command k8sschemas writes the Kubernetes JSON schemas that kubeconform
// validates deploy/kubernetes against, without downloading anything at run
// time: kubeconform fetches its schemas from GitHub, which the project's
// machines cannot reach, so they are generated here from the Kubernetes
// OpenAPI document (v2, protobuf) that the kustomize project ships inside
// its Go module sigs.k8s.io/kustomize/kyaml (openapi/kubernetesapi), pinned
// in this module's go.mod and fetched through the Go module proxy.
//
//	go run ./scripts/k8sschemas -out .tools/k8s-schemas
//	kubeconform -strict -schema-location '.tools/k8s-schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json' ...
//
// It writes what openapi2jsonschema writes for kubeconform's strict
// schemas: _definitions.json, every definition of the document, with
// additionalProperties: false on each object that lists its properties
// (unknown fields are errors) and int-or-string fields as either; and one
// file per kind, KIND-GROUP-VERSION.json (kubeconform's
// {{ .ResourceKind }}{{ .KindSuffix }}), referring to its definition. The
// document is that of the Kubernetes release kyaml embeds (its version is
// printed): a field newer than it is reported as unknown.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/kustomize/kyaml/openapi/kubernetesapi"
	"sigs.k8s.io/yaml"
)

func main() {
	out := flag.String("out", "", "directory to write the schemas into (created; required)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "k8sschemas: give -out DIR")
		os.Exit(2)
	}
	n, err := run(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sschemas:", err)
		os.Exit(1)
	}
	fmt.Printf("k8sschemas: %d kinds of Kubernetes %s (%s) in %s\n", n, kubernetesapi.DefaultOpenAPI, kubernetesapi.Info, *out)
}

func run(out string) (int, error) {
	asset := kubernetesapi.OpenAPIMustAsset[kubernetesapi.DefaultOpenAPI]
	if asset == nil {
		return 0, fmt.Errorf("kyaml has no OpenAPI document %s", kubernetesapi.DefaultOpenAPI)
	}
	name := "kubernetesapi/" + strings.ReplaceAll(kubernetesapi.DefaultOpenAPI, ".", "_") + "/swagger.pb"
	var doc openapiv2.Document
	if err := proto.Unmarshal(asset(name), &doc); err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	y, err := doc.YAMLValue("")
	if err != nil {
		return 0, fmt.Errorf("render %s: %w", name, err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return 0, fmt.Errorf("convert %s: %w", name, err)
	}
	var swagger struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(j, &swagger); err != nil {
		return 0, fmt.Errorf("decode %s: %w", name, err)
	}
	if len(swagger.Definitions) == 0 {
		return 0, fmt.Errorf("%s has no definitions", name)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	kinds := map[string]string{} // file name -> definition
	for defName, def := range swagger.Definitions {
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			group, _ := m["group"].(string)
			version, _ := m["version"].(string)
			kind, _ := m["kind"].(string)
			if kind == "" || version == "" {
				continue
			}
			kinds[fileName(group, version, kind)] = defName
		}
		strict(def)
	}
	defs, err := json.Marshal(map[string]any{"definitions": swagger.Definitions})
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(out, "_definitions.json"), defs, 0o644); err != nil {
		return 0, err
	}
	files := make([]string, 0, len(kinds))
	for f := range kinds {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		b, _ := json.Marshal(map[string]any{"$ref": "_definitions.json#/definitions/" + kinds[f]})
		if err := os.WriteFile(filepath.Join(out, f), b, 0o644); err != nil {
			return 0, err
		}
	}
	return len(files), nil
}

// fileName is kubeconform's {{ .ResourceKind }}{{ .KindSuffix }}.json for
// a kind: its lower-case name, then the first label of its group (none
// for the core group) and its version, e.g. deployment-apps-v1.json.
func fileName(group, version, kind string) string {
	suffix := ""
	if group != "" {
		suffix = "-" + strings.ToLower(strings.Split(group, ".")[0])
	}
	return strings.ToLower(kind) + suffix + "-" + strings.ToLower(version) + ".json"
}

// strict rewrites a schema in place as openapi2jsonschema --strict does:
// an object that lists its properties takes no others; an int-or-string
// is either. References (#/definitions/...) stay as they are: they
// resolve inside _definitions.json, and the kind files point into it.
func strict(s map[string]any) {
	if f, _ := s["format"].(string); f == "int-or-string" {
		delete(s, "format")
		delete(s, "type")
		s["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if _, set := s["additionalProperties"]; !set {
			s["additionalProperties"] = false
		}
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				strict(m)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if m, ok := s[k].(map[string]any); ok {
			strict(m)
		}
	}
}
