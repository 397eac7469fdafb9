// Package quantity parses Kubernetes quantities ("12Ki", "1.5", "1e3")
// within bounds, for every language that reads them (Kyverno's condition
// operators, the JMESPath arithmetic functions, CEL's quantity library,
// kinitiras' templates).
//
// k8s.io/apimachinery's resource.ParseQuantity accepts any decimal
// exponent ("1e999999999"); comparing or adding such a quantity scales a
// big decimal by ten to that power, which runs for hours and cannot be
// interrupted. Parse refuses, before apimachinery sees it, a quantity
// whose exponent or digits exceed what Kubernetes can represent with
// generous room (MaxExponent, MaxDigits): the refusal is ErrOutOfRange, in
// the chain of lang.ErrLimit. Anything Kubernetes itself stores exactly
// (magnitudes up to 2^63-1, nine decimal places) parses as apimachinery
// parses it.
//
// The package knows no rule kind and no admission; it imports lang (for
// ErrLimit) and apimachinery's resource package only.
package quantity
