// Command luahealth runs an Argo CD resource health check (Lua) under gopher-lua, the interpreter Argo CD
// embeds, for each object of a JSON list read from stdin, as Argo CD does: the object as the global
// table `obj`, the script's returned table's `status` and `message`. One JSON line per object,
// {"name", "status", "message"}. Usage: luahealth SCRIPT.lua < objects.json. A test helper of
// kafka-placement-operator (tests/rig/gitops).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	lua "github.com/yuin/gopher-lua"
)

func toLua(L *lua.LState, v interface{}) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []interface{}:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case map[string]interface{}:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: luahealth SCRIPT.lua < objects.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "luahealth: %v\n", err)
		os.Exit(2)
	}
	var objects []map[string]interface{}
	if err := json.NewDecoder(os.Stdin).Decode(&objects); err != nil {
		fmt.Fprintf(os.Stderr, "luahealth: stdin is not a JSON list of objects: %v\n", err)
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	for _, obj := range objects {
		L := lua.NewState(lua.Options{SkipOpenLibs: false})
		L.SetGlobal("obj", toLua(L, obj))
		if err := L.DoString(string(script)); err != nil {
			fmt.Fprintf(os.Stderr, "luahealth: %v\n", err)
			os.Exit(1)
		}
		ret, ok := L.Get(-1).(*lua.LTable)
		if !ok {
			fmt.Fprintln(os.Stderr, "luahealth: the script returned no table")
			os.Exit(1)
		}
		name := ""
		if meta, ok := obj["metadata"].(map[string]interface{}); ok {
			name, _ = meta["name"].(string)
		}
		_ = out.Encode(map[string]string{
			"name":    name,
			"status":  ret.RawGetString("status").String(),
			"message": lua.LVAsString(ret.RawGetString("message")),
		})
		L.Close()
	}
}
