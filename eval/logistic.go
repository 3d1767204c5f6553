package eval

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// logistic is an L2-regularised logistic regression over standardised
// features: P(y=1|x) = σ(b + w·x).
type logistic struct {
	w []float64
	b float64
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

func (m logistic) score(x []float64) float64 {
	s := m.b
	for i, v := range x {
		s += m.w[i] * v
	}
	return s
}

// fitLogistic fits weights by Newton's method (iteratively reweighted least
// squares) minimising the weighted log loss plus lambda/2·|w|² (the
// intercept is not penalised). x rows are standardised feature vectors, y
// the labels, sw the sample weights.
func fitLogistic(x [][]float64, y []bool, sw []float64, lambda float64) (logistic, error) {
	if len(x) == 0 {
		return logistic{}, errors.New("no training samples")
	}
	d := len(x[0])
	p := d + 1 // weights, then the intercept
	theta := make([]float64, p)
	// Start the intercept at the weighted log-odds of y.
	var pos, tot float64
	for i := range y {
		tot += sw[i]
		if y[i] {
			pos += sw[i]
		}
	}
	if pos == 0 || pos == tot {
		return logistic{}, errors.New("training samples hold one outcome only: both succeeded and failed runs are needed")
	}
	theta[d] = math.Log(pos / (tot - pos))
	h := mat.NewSymDense(p, nil)
	g := mat.NewVecDense(p, nil)
	row := make([]float64, p)
	prevLoss := math.Inf(1)
	for iter := 0; iter < 100; iter++ {
		h.Zero()
		g.Zero()
		loss := 0.0
		for i, xi := range x {
			copy(row, xi)
			row[d] = 1
			z := theta[d]
			for j := 0; j < d; j++ {
				z += theta[j] * xi[j]
			}
			mu := sigmoid(z)
			t := 0.0
			if y[i] {
				t = 1
				loss -= sw[i] * math.Log(math.Max(mu, 1e-300))
			} else {
				loss -= sw[i] * math.Log(math.Max(1-mu, 1e-300))
			}
			r := sw[i] * (mu - t)
			wt := sw[i] * mu * (1 - mu)
			for a := 0; a < p; a++ {
				g.SetVec(a, g.AtVec(a)+r*row[a])
				for b := a; b < p; b++ {
					h.SetSym(a, b, h.At(a, b)+wt*row[a]*row[b])
				}
			}
		}
		for j := 0; j < d; j++ {
			loss += lambda / 2 * theta[j] * theta[j]
			g.SetVec(j, g.AtVec(j)+lambda*theta[j])
			h.SetSym(j, j, h.At(j, j)+lambda)
		}
		h.SetSym(d, d, h.At(d, d)+1e-9) // keeps the system positive definite
		var chol mat.Cholesky
		if ok := chol.Factorize(h); !ok {
			return logistic{}, errors.New("logistic regression: the Hessian is singular; use more runs or fewer features")
		}
		var step mat.VecDense
		if err := chol.SolveVecTo(&step, g); err != nil {
			return logistic{}, err
		}
		for j := range theta {
			theta[j] -= step.AtVec(j)
		}
		if math.Abs(prevLoss-loss) < 1e-9*math.Max(1, math.Abs(loss)) {
			break
		}
		prevLoss = loss
	}
	// Newton's steps on runs that the features separate perfectly (or on
	// huge inputs) can leave the finite numbers: such a fit is refused
	// here, not carried into a model file JSON cannot hold.
	for _, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return logistic{}, errors.New("logistic regression did not converge to finite weights; use more runs or fewer features")
		}
	}
	return logistic{w: theta[:d], b: theta[d]}, nil
}

// fitPlatt fits P(y=1|s) = σ(a·s + b) to scores s by unregularised
// one-feature logistic regression.
func fitPlatt(s []float64, y []bool, sw []float64) (a, b float64, err error) {
	x := make([][]float64, len(s))
	for i, v := range s {
		x[i] = []float64{v}
	}
	m, err := fitLogistic(x, y, sw, 0)
	if err != nil {
		return 0, 0, err
	}
	return m.w[0], m.b, nil
}
