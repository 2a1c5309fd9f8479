package server

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// decodedElements counts, by reflection, what v (a decoded kmsg struct)
// holds, as countElements counts it from the wire.
func decodedElements(v reflect.Value, e *elements) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[kmsg.Tags]():
			if n := f.Addr().Interface().(*kmsg.Tags).Len(); n > 0 {
				e.tagged++
				e.tags += int64(n)
			}
		case f.Kind() == reflect.String:
			e.decoded += int64(f.Len())
			e.strings += int64(f.Len())
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			if !f.IsNil() {
				e.decoded += int64(f.Elem().Len())
				e.strings += int64(f.Elem().Len())
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() != reflect.Uint8:
			e.count += int64(f.Len())
			e.decoded += int64(f.Len()) * int64(f.Type().Elem().Size())
			for j := range f.Len() {
				switch el := f.Index(j); el.Kind() {
				case reflect.Struct:
					decodedElements(el, e)
				case reflect.String:
					e.decoded += int64(el.Len())
					e.strings += int64(el.Len())
				}
			}
		}
	}
}

// TestRequestLayoutsCountWhatKmsgDecodes: for every API and version
// served, and every hostile and realistic shape of it (a few elements of
// each array, empty or named, tags in every struct), the layout taken
// from kmsg walks the whole body and counts the elements, strings and
// tags kmsg decodes it to; and the bound counted never passes
// quickBound, which spares small frames the count.
func TestRequestLayoutsCountWhatKmsgDecodes(t *testing.T) {
	t.Parallel()
	table := newAPITable(handlers())
	for _, vr := range protocol.SupportedVersions() {
		key := kmsg.Key(vr.Key)
		for v := vr.Min; v <= vr.Max; v++ {
			l, err := layoutOf(vr.Key, v, nil)
			require.NoError(t, err)
			shapes := append(shapesOf(key, v), realisticShapes(key, v)...)
			for _, s := range shapes {
				for _, n := range []int{0, 1, 3, 100} {
					req := s.make(n)
					frame := rawRequest(req, 7, "layout")[4:]
					h, body, err := protocol.ParseHeader(frame)
					require.NoError(t, err)
					served := table[key].layouts[v]
					assert.LessOrEqual(t, boundOf(countElements(served, body)), quickBound(served, len(frame)),
						"%s v%d %s x%d: counted past quickBound", key.Name(), v, s.name, n)
					got, rest := walkBody(l, body)
					require.NotNil(t, rest, "%s v%d %s x%d: the body ends before its layout", key.Name(), v, s.name, n)
					assert.Empty(t, rest, "%s v%d %s x%d: bytes left after the layout", key.Name(), v, s.name, n)

					decoded, err := protocol.DecodeRequest(h, body)
					require.NoError(t, err)
					var want elements
					decodedElements(reflect.ValueOf(decoded).Elem(), &want)
					got.top = 0 // a part of strings, which decodedElements does not tell apart
					if got.tags == want.tags {
						assert.Equal(t, want, got, "%s v%d %s x%d", key.Name(), v, s.name, n)
						continue
					}
					// A tagged field kmsg knows (Fetch's ClusterID) is
					// decoded into its field: counted as a tag whose value
					// is a string.
					assert.Equal(t, want.count, got.count, "%s v%d %s x%d", key.Name(), v, s.name, n)
					assert.GreaterOrEqual(t, got.tags, want.tags, "%s v%d %s x%d", key.Name(), v, s.name, n)
					assert.GreaterOrEqual(t, got.strings, want.strings, "%s v%d %s x%d", key.Name(), v, s.name, n)
					assert.GreaterOrEqual(t, got.decoded, want.decoded, "%s v%d %s x%d", key.Name(), v, s.name, n)
				}
			}
		}
	}
}
