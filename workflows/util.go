package workflows

import "sort"

// sortedKeys keeps workflow code deterministic when it walks a map: the
// keys are collected in map order and then sorted. (slices.Sorted(maps.Keys(m))
// says the same, but workflowcheck flags maps.Keys as iterating over a map.)
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	//workflowcheck:ignore the order is discarded by the sort below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
