// Command kstatus prints kstatus' verdict (sigs.k8s.io/cli-utils/pkg/kstatus/status.Compute, what Flux's
// health checks and kpt use) for each object of a JSON list read from stdin: one JSON line per object,
// {"name", "status", "message"}. A test helper of kafka-placement-operator (tests/rig/gitops).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	var objects []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&objects); err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: stdin is not a JSON list of objects: %v\n", err)
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	for _, raw := range objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil { // integers as int64, as a client reads them
			fmt.Fprintf(os.Stderr, "kstatus: not an object: %v\n", err)
			os.Exit(2)
		}
		res, err := status.Compute(u)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: %s/%s: %v\n", u.GetKind(), u.GetName(), err)
			os.Exit(1)
		}
		_ = out.Encode(map[string]string{"name": u.GetName(), "status": res.Status.String(), "message": res.Message})
	}
}
