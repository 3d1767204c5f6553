package eval

import "math"

// studentTQuantile is the p-quantile (0.5 ≤ p < 1) of Student's t
// distribution with df degrees of freedom: the t such that
// P(T ≤ t) = p, by bisection on its distribution function.
func studentTQuantile(p float64, df int) float64 {
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, df) < p {
		lo, hi = hi, 2*hi
	}
	for range 100 {
		mid := (lo + hi) / 2
		if studentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// studentTCDF is P(T ≤ t) for t ≥ 0 and df degrees of freedom:
// 1 − I_x(df/2, 1/2)/2 with x = df/(df+t²).
func studentTCDF(t float64, df int) float64 {
	v := float64(df)
	return 1 - regularizedBeta(v/(v+t*t), v/2, 0.5)/2
}

// regularizedBeta is the regularized incomplete beta function I_x(a, b),
// by its continued fraction (Lentz's method) on the side where it
// converges fast.
func regularizedBeta(x, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaFraction(1-x, b, a)/b
	}
	return front * betaFraction(x, a, b) / a
}

// betaFraction is the continued fraction of the incomplete beta function.
func betaFraction(x, a, b float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		for _, num := range [2]float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			f *= c * d
		}
		if math.Abs(c*d-1) < 1e-15 {
			break
		}
	}
	return f
}
