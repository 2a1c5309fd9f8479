package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/settings"
)

// inner is embedded in binderSettings, as a package's Settings is in
// broker.Config.
type inner struct {
	Wait  time.Duration `flag:"wait" help:"how long to wait"`
	Limit int32         `flag:"limit" help:"at most this many"`
}

type binderSettings struct {
	Name    string `flag:"name" arg:"NAME" help:"NAME to use"`
	Verbose bool   `flag:"verbose" help:"say more"`
	NoAuto  bool   `flag:"auto" invert:"true" help:"do it by itself"`
	Count   int    `flag:"count" help:"how many"`
	Bytes   int64  `flag:"bytes" help:"how large"`
	inner
	Untagged int
}

func newBinder(t *testing.T, s *binderSettings) (*flag.FlagSet, *boundFlags) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, bindFields(fs, s)
}

// TestBindEveryType: each field type gets its flag, with the field's
// value as default, and a parsed value lands in the field.
func TestBindEveryType(t *testing.T) {
	t.Parallel()
	s := binderSettings{Name: "n", Count: 3, Bytes: 4, inner: inner{Wait: time.Second, Limit: 5}}
	fs, b := newBinder(t, &s)
	require.NoError(t, fs.Parse([]string{"--name", "kafka", "--verbose", "--auto=false", "--count", "7",
		"--bytes", "8589934592", "--wait", "250ms", "--limit", "-9"}))
	require.NoError(t, b.finish(fs))
	require.Equal(t, binderSettings{Name: "kafka", Verbose: true, NoAuto: true, Count: 7, Bytes: 8 << 30,
		inner: inner{Wait: 250 * time.Millisecond, Limit: -9}}, s)

	// Nothing given: the defaults stay, and the inverted bool its opposite.
	s = binderSettings{Name: "n", Count: 3}
	fs, b = newBinder(t, &s)
	require.NoError(t, fs.Parse(nil))
	require.NoError(t, b.finish(fs))
	require.Equal(t, binderSettings{Name: "n", Count: 3}, s)
	require.Equal(t, "true", fs.Lookup("auto").DefValue)
	require.Nil(t, fs.Lookup("untagged"), "a field without a tag is no flag")
}

// TestBindBadValueNamesTheFlag: a value its type cannot hold is refused
// naming the flag, the flag package's way or, for int32, the binder's.
func TestBindBadValueNamesTheFlag(t *testing.T) {
	t.Parallel()
	for args, want := range map[string][]string{
		`invalid value "x" for flag -count: parse error`:                 {"--count", "x"},
		`invalid value "1.5" for flag -bytes: parse error`:               {"--bytes", "1.5"},
		`invalid value "soon" for flag -wait: parse error`:               {"--wait", "soon"},
		`invalid boolean value "maybe" for -verbose: parse error`:        {"--verbose=maybe"},
		`invalid value "2147483648" for flag -limit: value out of range`: {"--limit", "2147483648"},
	} {
		var s binderSettings
		fs, b := newBinder(t, &s)
		err := fs.Parse(want)
		if err == nil {
			err = b.finish(fs)
		}
		require.EqualError(t, err, args)
	}
}

// TestBindRefusesAnExplicitZero: zero given for a setting whose default
// is not zero is refused (it would run the default); a zero default may
// be given.
func TestBindRefusesAnExplicitZero(t *testing.T) {
	t.Parallel()
	s := binderSettings{Count: 3, inner: inner{Wait: time.Second, Limit: 5}}
	fs, b := newBinder(t, &s)
	require.NoError(t, fs.Parse([]string{"--wait", "0s"}))
	require.EqualError(t, b.finish(fs), "--wait must not be 0: leave it out for its default, 1s")
	s = binderSettings{Count: 3, inner: inner{Wait: time.Second, Limit: 5}}
	fs, b = newBinder(t, &s)
	require.NoError(t, fs.Parse([]string{"--limit", "0"}))
	require.EqualError(t, b.finish(fs), "--limit must not be 0: leave it out for its default, 5")
	s = binderSettings{}
	fs, b = newBinder(t, &s)
	require.NoError(t, fs.Parse([]string{"--count", "0", "--bytes", "0"}))
	require.NoError(t, b.finish(fs))
}

// TestBindZeroTurnsOff: a zero:"off" field given 0 is set to -1, off,
// rather than refused; other values, and none, are as for any field. The
// tag on a field without a numeric default other than 0 is a mistake.
func TestBindZeroTurnsOff(t *testing.T) {
	t.Parallel()
	type delays struct {
		Delay time.Duration `flag:"delay" zero:"off" help:"how long"`
	}
	for args, want := range map[string]time.Duration{"--delay=0s": -1, "--delay=0": -1, "--delay=50ms": 50 * time.Millisecond, "": 100 * time.Millisecond} {
		s := delays{Delay: 100 * time.Millisecond}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		b := bindFields(fs, &s)
		var parsed []string
		if args != "" {
			parsed = []string{args}
		}
		require.NoError(t, fs.Parse(parsed))
		require.NoError(t, b.finish(fs), args)
		require.Equal(t, want, s.Delay, args)
	}
	var zeroDefault delays
	require.PanicsWithValue(t, `flagbind: setting Delay (--delay) is zero:"off" without a numeric default other than 0`, func() {
		bindFields(flag.NewFlagSet("t", flag.ContinueOnError), &zeroDefault)
	})
}

// TestBindExplainNamesFlags: a settings.Error of a bound field reads with
// flag names, for the field and for the other fields its problem names;
// other errors are left as they are.
func TestBindExplainNamesFlags(t *testing.T) {
	t.Parallel()
	var s binderSettings
	_, b := newBinder(t, &s)
	err := fmt.Errorf("broker: %w", settings.Errorf("x", "Limit", "(0) must be at most Count (1) and below Unknown"))
	require.EqualError(t, b.explain(err), "--limit (0) must be at most --count (1) and below Unknown")
	other := fmt.Errorf("broker: %w", settings.Errorf("x", "Elsewhere", "is wrong"))
	require.Equal(t, other, b.explain(other))
	plain := fmt.Errorf("broker: no")
	require.Equal(t, plain, b.explain(plain))
}

// TestBindHelp: -h shows the argument word, the type and the default as
// the flag package's own flags do.
func TestBindHelp(t *testing.T) {
	t.Parallel()
	s := binderSettings{Name: "n", inner: inner{Wait: time.Second}}
	fs, _ := newBinder(t, &s)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.PrintDefaults()
	require.Contains(t, out.String(), "  -name NAME\n    \tNAME to use (default \"n\")\n")
	require.Contains(t, out.String(), "  -wait duration\n    \thow long to wait (default 1s)\n")
	require.Contains(t, out.String(), "  -limit int\n    \tat most this many\n")
	require.Contains(t, out.String(), "  -auto\n    \tdo it by itself (default true)\n")
}

// TestBindMistakesPanic: a tagged field of a type without a flag, or two
// settings of one name, are the program's mistakes.
func TestBindMistakesPanic(t *testing.T) {
	t.Parallel()
	var bad struct {
		Ratio float64 `flag:"ratio"`
	}
	require.PanicsWithValue(t, "flagbind: setting Ratio (--ratio) has type float64, which has no flag", func() {
		bindFields(flag.NewFlagSet("t", flag.ContinueOnError), &bad)
	})
	type a struct {
		N int `flag:"a-n"`
	}
	type c struct {
		N int `flag:"c-n"`
	}
	var clash struct {
		a
		C c
		c
	}
	require.PanicsWithValue(t, "flagbind: two settings named N", func() {
		bindFields(flag.NewFlagSet("t", flag.ContinueOnError), &clash)
	})
}

// taggedFlags returns the flag tag of every field of broker.Config and
// the structs it embeds.
func taggedFlags(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if name, ok := sf.Tag.Lookup("flag"); ok {
			out[name] = sf.Name
		} else if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			for k, v := range taggedFlags(sf.Type) {
				out[k] = v
			}
		}
	}
	return out
}

// TestServeHelpListsEveryTaggedField: every tagged field of broker.Config
// is a serve flag -h lists, with its help and the default the broker
// applies to its zero value.
func TestServeHelpListsEveryTaggedField(t *testing.T) {
	t.Parallel()
	var help bytes.Buffer
	_, err := parseServeFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	tagged := taggedFlags(reflect.TypeOf(broker.Config{}))
	require.Len(t, tagged, 33, "the settings with a flag")
	listed := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(help.String(), -1)
	var names []string
	for _, m := range listed {
		names = append(names, m[1])
	}
	for name := range tagged {
		require.Contains(t, names, name)
	}
	require.Len(t, names, len(tagged)+9, "and --topic, --clock, --log-level, --tls-cert, --tls-key, --tls-client-ca, --sasl-user, --profile-dir, --trace-file")
	require.Contains(t, help.String(), "  -trace-file FILE\n    \tFILE to write the Go execution trace of the run to, for go tool trace (default: off)\n")
	require.Contains(t, help.String(), "  -max-fetch-wait duration\n    \tlongest a Fetch waits for records, whatever it asks for (default 5s)\n")
	require.Contains(t, help.String(), "  -segment-bytes int\n    \tsize at which a partition's active segment file rolls, in bytes (Kafka's log.segment.bytes) (default 67108864)\n")
	require.Contains(t, help.String(), "  -listen ADDR\n    \tADDR to listen on (default \"127.0.0.1:9092\")\n")
	require.Contains(t, help.String(), "  -connection-failed-authentication-delay duration\n    \thold back the answer to a failed SASL authentication and the close after it this long; 0 turns it off (Kafka's connection.failed.authentication.delay.ms) (default 100ms)\n")
}

// TestServeFlagsBindTheFields: a flag sets its broker.Config field, and
// what is not given is the default (Config's own, or the command's).
func TestServeFlagsBindTheFields(t *testing.T) {
	t.Parallel()
	f, err := parseServeFlags([]string{"--max-fetch-wait", "2s", "--segment-bytes", "4096", "--max-frame-bytes", "2048",
		"--auto-create-topics=false", "--transaction-max-timeout", "1m", "--max-groups", "9", "--accept-data-loss"}, io.Discard)
	require.NoError(t, err)
	cfg := f.config(nil)
	require.Equal(t, 2*time.Second, cfg.MaxFetchWait)
	require.Equal(t, int64(4096), cfg.SegmentBytes)
	require.Equal(t, int32(2048), cfg.MaxFrameBytes)
	require.True(t, cfg.NoAutoCreateTopics)
	require.Equal(t, time.Minute, cfg.TransactionMaxTimeout)
	require.Equal(t, 9, cfg.MaxGroups)
	require.True(t, cfg.AcceptDataLoss)
	require.Equal(t, defaultListen, cfg.Listen, "the command listens on Kafka's port unless told")
	require.Equal(t, "./minibroker-data", cfg.DataDir)
	require.Equal(t, 10*time.Minute, cfg.IdleTimeout)
	require.Equal(t, broker.DefaultExpiryInterval, cfg.ExpiryInterval)
}
