package server

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Counting what a request contains from its frame, before it is decoded:
// its arrays' elements, the strings decoding copies, its tagged fields.
// What a request holds beyond its frame follows from these counts
// (amplification.go), so a 40-byte topic name costs what it costs and an
// empty one what it costs, rather than every frame byte the most any byte
// could cost.
//
// The wire layout of every request at every version is taken from kmsg,
// which decodes it: the fields of its Go struct, in wire order, each
// probed by encoding the request with and without it (a field a version
// does not have encodes to nothing). So there is one walker for every
// API, and a new API or version has its layout with nothing written for
// it; TestRequestLayoutsCountWhatKmsgDecodes checks, for every API and
// version served, that the walk counts what kmsg decodes.

// wireKind is how a field is encoded.
type wireKind uint8

const (
	wireFixed  wireKind = iota // a number, a bool or a uuid: fixed bytes
	wireString                 // a string or nullable string: copied when decoded
	wireBytes                  // bytes or nullable bytes: referred to in the frame
	wireArray                  // an array of elem
	wireStruct                 // fields, then a tag section in a flexible version
)

// wireField is one field of a request's layout at one version.
type wireField struct {
	kind   wireKind
	fixed  int         // wireFixed: its bytes
	elem   *wireField  // wireArray: its element
	size   int64       // wireArray: the Go bytes of an element (the slice's backing)
	holds  int64       // wireArray: what an element holds beyond them (api.holds)
	copies int64       // wireArray: and per byte of its strings
	fields []wireField // wireStruct: the fields the version has, tagged ones aside
}

// requestLayout is the layout of a request of one API at one version.
type requestLayout struct {
	top      wireField // the request's struct
	flexible bool      // compact lengths and tag sections
	// perByte is the most a byte of such a request may hold beyond the
	// frame (costliestByte), for quickBound.
	perByte int64
}

// costliestByte returns the most a byte of the request may hold beyond the
// frame, by boundOf, but for its top-level tag section (quickBound adds
// that): the most of what an empty element of an array holds per byte of
// it, alone or with a tag in its section (two bytes: the tag's key and
// size), a string's byte, and a further tag's.
func (l *requestLayout) costliestByte() int64 {
	most := int64(1 + stringCopies + topStringCopies)
	if l.flexible {
		most = max(most, (tagBytes+1)/2)
	}
	p := prober{flexible: l.flexible}
	var arrays func(f *wireField)
	arrays = func(f *wireField) {
		switch f.kind {
		case wireArray:
			wire := max(int64(p.zeroBytes(f.elem)), 1)
			most = max(most, (f.size+f.holds+wire-1)/wire, 1+stringCopies+f.copies)
			if l.flexible && f.elem.kind == wireStruct {
				most = max(most, (f.size+f.holds+tagSectionBytes+tagBytes+wire+1)/(wire+2))
			}
			arrays(f.elem)
		case wireStruct:
			for i := range f.fields {
				arrays(&f.fields[i])
			}
		}
	}
	arrays(&l.top)
	return most
}

// elements is what a request contains, counted from its frame.
type elements struct {
	// count is the arrays' elements, at any depth, and held what they
	// hold beyond their decoded structs (api.holds).
	count, held int64
	// decoded is what decoding makes in Go: the arrays' backing and the
	// strings' bytes, which are copied (bytes are referred to).
	decoded int64
	// strings is the bytes of the strings, which an answer or an error
	// may copy again, and top those of the request's own strings (not an
	// element's: a transactional id, a group id), which a handler may
	// copy more often.
	strings, top int64
	// tagged is the tag sections that hold tags (kmsg keeps them in a map
	// each), tags the tagged fields.
	tagged, tags int64
}

// countElements counts what body (a request's frame after its header's
// client id) contains, by layout. A malformed body is counted as far as
// kmsg would allocate before it fails: an array's elements once its length
// is read, a length past the bytes left not at all (kmsg refuses it first).
func countElements(l *requestLayout, body []byte) elements {
	e, _ := walkBody(l, body)
	return e
}

// walkBody counts body by layout and returns what is left of it after the
// request, nil when it was too short.
func walkBody(l *requestLayout, body []byte) (elements, []byte) {
	w := wire{b: body, flexible: l.flexible}
	w.tags() // the header's: skipped, not kept (protocol.DecodeRequest)
	var e elements
	for i := range l.top.fields {
		f := &l.top.fields[i]
		strings := e.strings
		e.walk(&w, f)
		if f.kind == wireString {
			e.top += e.strings - strings
		}
	}
	if n, size := w.tags(); n > 0 {
		e.tagged++
		e.tags += n
		e.decoded += size
		e.strings += size
	}
	if w.bad {
		return e, nil
	}
	return e, w.b
}

// walk counts f and skips it in w.
func (e *elements) walk(w *wire, f *wireField) {
	switch f.kind {
	case wireFixed:
		w.skip(f.fixed)
	case wireString:
		n := int64(w.nullableString())
		e.decoded += n
		e.strings += n
	case wireBytes:
		w.nullableBytes()
	case wireArray:
		n := w.arrayLen()
		e.count += int64(n)
		e.decoded += int64(n) * f.size
		e.held += int64(n) * f.holds
		if f.elem.kind == wireFixed {
			w.skip(n * f.elem.fixed)
			return
		}
		strings := e.strings
		for range n {
			if w.bad {
				break
			}
			e.walk(w, f.elem)
		}
		e.held += (e.strings - strings) * f.copies
	case wireStruct:
		for i := range f.fields {
			switch g := &f.fields[i]; g.kind {
			case wireFixed: // inline: most fields of most elements
				w.skip(g.fixed)
			case wireString:
				n := int64(w.nullableString())
				e.decoded += n
				e.strings += n
			default:
				e.walk(w, g)
			}
		}
		if n, size := w.tags(); n > 0 {
			e.tagged++
			e.tags += n
			e.decoded += size // a known tagged field's string is copied
			e.strings += size
		}
	}
}

// layoutOf returns the layout of API key's requests at version, taken
// from kmsg's struct and encoding, with what an element of each array
// holds beyond its struct: holds, by the array's path of Go field names
// ("Topics.Partitions"), 0 for an array not named. It fails for a field
// it cannot walk: a struct that is not an array's element, or a tagged
// array.
func layoutOf(key, version int16, holds holds) (*requestLayout, error) {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("no request for key %d", key)
	}
	req.SetVersion(version)
	p := prober{key: key, version: version, flexible: req.IsFlexible(), holds: holds}
	top, err := p.structOf(reflect.TypeOf(req).Elem(), nil, "")
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	return &requestLayout{top: top, flexible: p.flexible}, nil
}

// prober finds a request's layout at one version by encoding it.
type prober struct {
	key, version int16
	flexible     bool
	holds        holds
}

// encode returns the body of a request whose arrays on path have one
// element each and, if change, whose field at the end of path is changed
// from its default.
func (p prober) encode(path []int, change bool) []byte {
	req := kmsg.RequestForKey(p.key)
	req.SetVersion(p.version)
	v := reflect.ValueOf(req).Elem()
	for i, at := range path {
		f := v.Field(at)
		if i == len(path)-1 {
			if change {
				changeValue(f)
			}
			break
		}
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), defaulted(f.Type().Elem())))
			f = f.Index(0)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		v = f
	}
	return req.AppendTo(nil)
}

// changeValue sets v to a value other than its own, of one byte more for
// a string or bytes and one element more for an array.
func changeValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Pointer: // a nullable string
		s := "x"
		if !v.IsNil() {
			s = v.Elem().String() + "x"
		}
		v.Set(reflect.ValueOf(&s))
	case reflect.Array: // a uuid
		v.Index(0).SetUint(v.Index(0).Uint() + 1)
	case reflect.Slice:
		v.Set(reflect.Append(v, defaulted(v.Type().Elem())))
	}
}

// defaulted returns a new value of t with kmsg's defaults, which a tagged
// field is not encoded at.
func defaulted(t reflect.Type) reflect.Value {
	v := reflect.New(t)
	if d, ok := v.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	return v.Elem()
}

// structOf returns the layout of the struct of type t at path, named
// name.
func (p prober) structOf(t reflect.Type, path []int, name string) (wireField, error) {
	s := wireField{kind: wireStruct}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == reflect.TypeFor[kmsg.Tags]() || len(path) == 0 && f.Name == "Version" {
			continue // the tag section; the version is the header's
		}
		at := append(slices.Clone(path), i)
		named := f.Name
		if name != "" {
			named = name + "." + f.Name
		}
		if deref(f.Type).Kind() == reflect.Struct {
			inner, err := p.structOf(deref(f.Type), at, named)
			if err != nil {
				return s, err
			}
			if len(inner.fields) > 0 {
				return s, fmt.Errorf("field %s: a struct outside an array is not walked", f.Name)
			}
			continue
		}
		base, changed := p.encode(at, false), p.encode(at, true)
		if bytes.Equal(base, changed) {
			continue // not in this version
		}
		field, err := p.fieldOf(f.Type, at, named)
		if err != nil {
			return s, fmt.Errorf("field %s: %w", f.Name, err)
		}
		if len(changed)-len(base) != p.grows(&field) {
			// A tagged field: counted with its struct's tags.
			if field.kind == wireArray {
				return s, fmt.Errorf("field %s: a tagged array is not walked", f.Name)
			}
			continue
		}
		if n := len(s.fields); n > 0 && field.kind == wireFixed && s.fields[n-1].kind == wireFixed {
			s.fields[n-1].fixed += field.fixed // one skip for a run of numbers
			continue
		}
		s.fields = append(s.fields, field)
	}
	return s, nil
}

func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// fieldOf returns the layout of a field of type t at path, named name.
func (p prober) fieldOf(t reflect.Type, path []int, name string) (wireField, error) {
	switch t.Kind() {
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		return wireField{kind: wireFixed, fixed: 1}, nil
	case reflect.Int16, reflect.Uint16:
		return wireField{kind: wireFixed, fixed: 2}, nil
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return wireField{kind: wireFixed, fixed: 4}, nil
	case reflect.Int64, reflect.Uint64, reflect.Float64:
		return wireField{kind: wireFixed, fixed: 8}, nil
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return wireField{kind: wireFixed, fixed: t.Len()}, nil
		}
	case reflect.String:
		return wireField{kind: wireString}, nil
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.String {
			return wireField{kind: wireString}, nil
		}
	case reflect.Slice:
		et := t.Elem()
		if et.Kind() == reflect.Uint8 {
			return wireField{kind: wireBytes}, nil
		}
		var elem wireField
		var err error
		if et.Kind() == reflect.Struct {
			elem, err = p.structOf(et, path, name)
		} else {
			elem, err = p.fieldOf(et, path, name)
		}
		if err != nil {
			return wireField{}, err
		}
		h := p.holds[name]
		return wireField{kind: wireArray, elem: &elem, size: int64(et.Size()), holds: int64(h.each), copies: int64(h.copies)}, nil
	}
	return wireField{}, fmt.Errorf("type %v is not walked", t)
}

// grows returns by how many bytes changeValue grows field f, encoded in
// place (a tagged field grows by more: its tag's key and size).
func (p prober) grows(f *wireField) int {
	switch f.kind {
	case wireString, wireBytes:
		return 1
	case wireArray:
		return p.zeroBytes(f.elem)
	}
	return 0
}

// zeroBytes returns the encoded size of f's zero value: empty strings,
// bytes and arrays, and empty tag sections.
func (p prober) zeroBytes(f *wireField) int {
	switch f.kind {
	case wireFixed:
		return f.fixed
	case wireString:
		if p.flexible {
			return 1
		}
		return 2
	case wireBytes, wireArray:
		if p.flexible {
			return 1
		}
		return 4
	}
	n := 0
	for i := range f.fields {
		n += p.zeroBytes(&f.fields[i])
	}
	if p.flexible {
		n++
	}
	return n
}
