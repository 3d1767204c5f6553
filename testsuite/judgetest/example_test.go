package judgetest_test

import (
	"fmt"
	"math"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

// MarshalLoose writes what encoding/json refuses: the body of a service
// that answers NaN.
func ExampleMarshalLoose() {
	b, err := judgetest.MarshalLoose(jev.Answer{Type: jev.Noul, Probability: jev.Prob(math.NaN())})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	// Output: {"probability":NaN,"type":"noul"}
}

// ValidResponse answers any request validly: a scripted backend's answer
// for the suite's valid cases, and a starting point for invalid ones.
func ExampleValidResponse() {
	req := judgetest.GenericRequest()
	resp := judgetest.ValidResponse(req)
	fmt.Println(resp.ModelVersion, jev.Validate(req, resp))
	fmt.Println(resp.Answers["team"].Choice, *resp.Answers["is_bug"].Probability)
	// Output:
	// judgetest-model-1 <nil>
	// support 0.8
}
