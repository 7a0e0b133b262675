package controller

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// The view carries every field of the observation it names, as observed:
// each field the announcer reads is filled with a value of its own and
// must arrive.
func TestViewCarriesTheObservation(t *testing.T) {
	obs := &observe.Observation{}
	o := reflect.ValueOf(obs).Elem()
	vt := reflect.TypeOf(announce.View{})
	for i := range vt.NumField() {
		name := vt.Field(i).Name
		f := o.FieldByName(name)
		if !f.IsValid() || name == "WindowEnd" {
			continue // the view's own: Governed; WindowEnd, cut below
		}
		if !fill(f) {
			t.Fatalf("cannot fill Observation.%s (%s) for the test", name, f.Type())
		}
	}
	obs.WindowEnd = observe.WindowEnd{Close: time.Unix(100, 0), Left: time.Minute, Forecast: 2 * time.Minute, Learned: true}
	v := reflect.ValueOf(view(obs)).Elem()
	for i := range vt.NumField() {
		name := vt.Field(i).Name
		f := o.FieldByName(name)
		if !f.IsValid() || name == "WindowEnd" {
			continue
		}
		if !reflect.DeepEqual(v.Field(i).Interface(), f.Interface()) {
			t.Errorf("View.%s = %v, want the observation's %v", name, v.Field(i).Interface(), f.Interface())
		}
	}
	if w := view(obs).WindowEnd; w != (announce.WindowEnd{Close: time.Unix(100, 0), Left: time.Minute, Forecast: 2 * time.Minute, Learned: true}) {
		t.Errorf("window end %+v", w)
	}
}

// fill gives v a value that is not its zero value; false when it cannot.
func fill(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return true
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return true
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		return true
	case reflect.String:
		v.SetString("x")
		return true
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
		return true
	case reflect.Bool:
		v.SetBool(true)
		return true
	case reflect.Interface:
		e := reflect.ValueOf(errors.New("x"))
		if e.Type().Implements(v.Type()) {
			v.Set(e)
			return true
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(42, 0)))
			return true
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && fill(v.Field(i)) {
				return true
			}
		}
	}
	return false
}
