package jmespath

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
)

// jpX509Decode decodes a PEM certificate or certificate request into the
// JSON form of Go's x509.Certificate or x509.CertificateRequest, as
// Kyverno: an RSA public key is {N: its decimal text, E}; the other
// numbers are JSON numbers read as float64, as Kyverno's (a serial number
// beyond 2^53 loses digits there too: SerialNumber.String() is not
// offered by Kyverno either).
func jpX509Decode(a []any) (any, error) {
	block, _ := pem.Decode([]byte(a[0].(string)))
	if block == nil {
		return nil, funcError("x509_decode", "failed to decode PEM block")
	}
	var v any
	var pub any
	switch block.Type {
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, funcError("x509_decode", "%v", err)
		}
		v, pub = c, c.PublicKey
	case "CERTIFICATE REQUEST":
		c, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return nil, funcError("x509_decode", "%v", err)
		}
		v, pub = c, c.PublicKey
	default:
		return nil, funcError("x509_decode", "unsupported PEM block type %q", block.Type)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, funcError("x509_decode", "%v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out map[string]any
	if err := d.Decode(&out); err != nil {
		return nil, funcError("x509_decode", "%v", err)
	}
	if k, ok := pub.(*rsa.PublicKey); ok {
		out["PublicKey"] = map[string]any{"N": k.N.String(), "E": float64(k.E)}
	}
	lib, _, err := toLib(out)
	if err != nil {
		return nil, funcError("x509_decode", "%v", err)
	}
	return lib, nil
}
