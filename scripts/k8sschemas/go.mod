module github.com/corohq/temporal-overseer/scripts/k8sschemas

go 1.26.0

require (
	github.com/google/gnostic-models v0.7.1
	google.golang.org/protobuf v1.36.12
	sigs.k8s.io/kustomize/kyaml v0.21.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	go.yaml.in/yaml/v3 v3.0.3 // indirect
)
