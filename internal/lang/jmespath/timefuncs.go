package jmespath

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"
)

// parseTime parses argument i as an RFC 3339 time.
func parseTime(name string, a []any, i int) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, a[i].(string))
	if err != nil {
		return t, funcError(name, "argument #%d: %v", i+1, err)
	}
	return t, nil
}

// parseLayout parses s in layout, RFC 3339 when layout is empty.
func parseLayout(name, layout, s string) (time.Time, error) {
	if layout == "" {
		layout = time.RFC3339
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return t, funcError(name, "%v", err)
	}
	return t, nil
}

// jpTimeSince is the duration from the second argument to the third (now
// when empty), both in the layout of the first (RFC 3339 when empty).
func jpTimeSince(a []any) (any, error) {
	layout := a[0].(string)
	t1, err := parseLayout("time_since", layout, a[1].(string))
	if err != nil {
		return nil, err
	}
	t2 := time.Now()
	if s := a[2].(string); s != "" {
		if t2, err = parseLayout("time_since", layout, s); err != nil {
			return nil, err
		}
	}
	return t2.Sub(t1).String(), nil
}

func jpTimeNow([]any) (any, error) { return time.Now().Format(time.RFC3339), nil }

func jpTimeNowUTC([]any) (any, error) { return time.Now().UTC().Format(time.RFC3339), nil }

// jpTimeToCron is the cron schedule "minute hour day month weekday" of a
// time, in its own zone.
func jpTimeToCron(a []any) (any, error) {
	t, err := parseTime("time_to_cron", a, 0)
	if err != nil {
		return nil, err
	}
	return fmt.Sprintf("%d %d %d %d %d", t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday())), nil
}

// timeAndDuration parses a time and a duration (arguments 1 and 2).
func timeAndDuration(name string, a []any) (time.Time, time.Duration, error) {
	t, err := parseTime(name, a, 0)
	if err != nil {
		return t, 0, err
	}
	d, err := time.ParseDuration(a[1].(string))
	if err != nil {
		return t, 0, funcError(name, "argument #2: %v", err)
	}
	return t, d, nil
}

func jpTimeAdd(a []any) (any, error) {
	t, d, err := timeAndDuration("time_add", a)
	if err != nil {
		return nil, err
	}
	return t.Add(d).Format(time.RFC3339), nil
}

func jpTimeTruncate(a []any) (any, error) {
	t, d, err := timeAndDuration("time_truncate", a)
	if err != nil {
		return nil, err
	}
	return t.Truncate(d).Format(time.RFC3339), nil
}

// jpTimeParse parses a time in a Go layout (argument 1) to RFC 3339; a
// layout that is an integer means the time is Unix seconds (given in
// UTC).
func jpTimeParse(a []any) (any, error) {
	layout, s := a[0].(string), a[1].(string)
	if _, err := strconv.ParseInt(layout, 10, 64); err == nil {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, funcError("time_parse", "%v", err)
		}
		return time.Unix(sec, 0).UTC().Format(time.RFC3339), nil
	}
	t, err := parseLayout("time_parse", layout, s)
	if err != nil {
		return nil, err
	}
	return t.Format(time.RFC3339), nil
}

func jpTimeUTC(a []any) (any, error) {
	t, err := parseTime("time_utc", a, 0)
	if err != nil {
		return nil, err
	}
	return t.UTC().Format(time.RFC3339), nil
}

// times parses arguments 1..n as RFC 3339 times.
func times(name string, a []any) ([]time.Time, error) {
	ts := make([]time.Time, len(a))
	for i := range a {
		t, err := parseTime(name, a, i)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

func jpTimeDiff(a []any) (any, error) {
	ts, err := times("time_diff", a)
	if err != nil {
		return nil, err
	}
	return ts[1].Sub(ts[0]).String(), nil
}

func jpTimeBefore(a []any) (any, error) {
	ts, err := times("time_before", a)
	if err != nil {
		return nil, err
	}
	return ts[0].Before(ts[1]), nil
}

func jpTimeAfter(a []any) (any, error) {
	ts, err := times("time_after", a)
	if err != nil {
		return nil, err
	}
	return ts[0].After(ts[1]), nil
}

// jpTimeBetween reports whether the first time is strictly between the
// second and the third.
func jpTimeBetween(a []any) (any, error) {
	ts, err := times("time_between", a)
	if err != nil {
		return nil, err
	}
	return ts[0].After(ts[1]) && ts[0].Before(ts[2]), nil
}

// lookupTimeout bounds is_external_url's DNS lookup.
const lookupTimeout = 2 * time.Second

// jpIsExternalURL reports whether a URL's host is outside the cluster's
// reach: not loopback, private, link-local or unspecified. A host name is
// resolved (bounded by lookupTimeout); it is external when none of its
// addresses is internal.
func jpIsExternalURL(a []any) (any, error) {
	u, err := url.Parse(a[0].(string))
	if err != nil {
		return nil, funcError("is_external_url", "%v", err)
	}
	host := u.Hostname()
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		defer cancel()
		if ips, err = net.DefaultResolver.LookupIP(ctx, "ip", host); err != nil {
			return nil, funcError("is_external_url", "%v", err)
		}
	}
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() {
			return false, nil
		}
	}
	return true, nil
}
