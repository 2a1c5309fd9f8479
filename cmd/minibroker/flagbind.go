package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/minibroker/minibroker/internal/settings"
)

// boundFlags are the flags bindFields defined from a struct's tagged
// fields: the one path from a setting to its flag.
//
// A field is a flag when it has a `flag:"NAME"` tag; `help:"..."` is the
// flag's usage, `arg:"WORD"` the word of the usage -h shows as the
// flag's argument (flag.UnquoteUsage), `invert:"true"` makes a bool
// field the flag's opposite (NoAutoCreateTopics is --auto-create-topics),
// and `zero:"off"` makes a 0 given for a numeric field whose default is
// not 0 turn the setting off, stored as -1 (zero is the default in
// Config): --connection-failed-authentication-delay 0, as Kafka's 0.
// Embedded structs are walked. The field's value when bound is the
// flag's default.
type boundFlags struct {
	flags  []*boundFlag
	byName map[string]string // Go field name to flag name
}

// boundFlag is one field's flag.
type boundFlag struct {
	name   string
	field  reflect.Value
	commit func() error // copies a value the flag package cannot hold; nil if none
	// zeroRefused: a numeric field whose default is not zero, where a
	// zero given on the command line would silently mean that default.
	zeroRefused bool
	// zeroOff: a zero given turns the setting off instead (zero:"off").
	zeroOff bool
	def     string
}

// bindFields defines on fs a flag for every tagged field of the struct v
// points to. A tagged field of a type it does not know, or two fields of
// one name, are mistakes in the program: it panics.
func bindFields(fs *flag.FlagSet, v any) *boundFlags {
	b := &boundFlags{byName: map[string]string{}}
	b.walk(fs, reflect.ValueOf(v).Elem())
	return b
}

func (b *boundFlags) walk(fs *flag.FlagSet, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		sf, fv := t.Field(i), v.Field(i)
		name, ok := sf.Tag.Lookup("flag")
		if !ok {
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				b.walk(fs, fv)
			}
			continue
		}
		if _, dup := b.byName[sf.Name]; dup {
			panic(fmt.Sprintf("flagbind: two settings named %s", sf.Name))
		}
		b.byName[sf.Name] = name
		b.flags = append(b.flags, b.define(fs, name, sf, fv))
	}
}

// define defines field's flag: one case per field type.
func (b *boundFlags) define(fs *flag.FlagSet, name string, sf reflect.StructField, field reflect.Value) *boundFlag {
	usage := sf.Tag.Get("help")
	if arg := sf.Tag.Get("arg"); arg != "" {
		usage = strings.Replace(usage, arg, "`"+arg+"`", 1)
	}
	f := &boundFlag{name: name, field: field}
	switch p := field.Addr().Interface().(type) {
	case *string:
		fs.StringVar(p, name, *p, usage)
	case *bool:
		if sf.Tag.Get("invert") == "true" {
			var on bool
			fs.BoolVar(&on, name, !*p, usage)
			f.commit = func() error { *p = !on; return nil }
		} else {
			fs.BoolVar(p, name, *p, usage)
		}
	case *int:
		fs.IntVar(p, name, *p, usage)
		f.zeroRefused, f.def = *p != 0, strconv.Itoa(*p)
	case *int32:
		// The flag package has no int32 flag; an int one keeps -h saying
		// "int", and the value is checked into the field after parsing.
		n := int(*p)
		fs.IntVar(&n, name, n, usage)
		f.commit = func() error {
			if n < math.MinInt32 || n > math.MaxInt32 {
				return fmt.Errorf("invalid value %q for flag -%s: value out of range", strconv.Itoa(n), name)
			}
			*p = int32(n)
			return nil
		}
		f.zeroRefused, f.def = *p != 0, strconv.Itoa(int(*p))
	case *time.Duration:
		fs.DurationVar(p, name, *p, usage)
		f.zeroRefused, f.def = *p != 0, p.String()
	case *int64:
		fs.Int64Var(p, name, *p, usage)
		f.zeroRefused, f.def = *p != 0, strconv.FormatInt(*p, 10)
	default:
		panic(fmt.Sprintf("flagbind: setting %s (--%s) has type %s, which has no flag", sf.Name, name, sf.Type))
	}
	if sf.Tag.Get("zero") == "off" {
		if !f.zeroRefused || !field.CanInt() {
			panic(fmt.Sprintf("flagbind: setting %s (--%s) is zero:\"off\" without a numeric default other than 0", sf.Name, name))
		}
		f.zeroRefused, f.zeroOff = false, true
	}
	return f
}

// finish runs after fs.Parse: it copies the values the flag package held
// for fields of its own, and refuses a zero given for a setting whose
// default is not zero (in Config, zero means the default, so the zero
// asked for would not be what runs).
func (b *boundFlags) finish(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range b.flags {
		if f.commit != nil {
			if err := f.commit(); err != nil {
				return err
			}
		}
		if f.zeroRefused && given[f.name] && f.field.IsZero() {
			return fmt.Errorf("--%s must not be 0: leave it out for its default, %s", f.name, f.def)
		}
		if f.zeroOff && given[f.name] && f.field.IsZero() {
			f.field.SetInt(-1)
		}
	}
	return nil
}

// goName matches a Go field name inside a settings.Error's problem.
var goName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]+\b`)

// explain returns err with the settings it names as flags: a
// *settings.Error of a bound field becomes "--flag problem", each other
// bound field its problem names becoming "--other". Any other error is
// returned as it is.
func (b *boundFlags) explain(err error) error {
	var se *settings.Error
	if !errors.As(err, &se) {
		return err
	}
	name, ok := b.byName[se.Field]
	if !ok {
		return err
	}
	problem := goName.ReplaceAllStringFunc(se.Problem, func(w string) string {
		if n, ok := b.byName[w]; ok {
			return "--" + n
		}
		return w
	})
	return errors.New("--" + name + " " + problem)
}
