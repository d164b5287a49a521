package bridge

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// coreScripts are the worker's entry point and the shared core.
//
//go:embed python/*.py
var coreScripts embed.FS

// writeScripts writes the core scripts and the plugin's own *.py files (if
// any) into a new private directory and returns it. A plugin file may not
// shadow a core one.
func writeScripts(name string, plugin fs.FS) (string, error) {
	dir, err := os.MkdirTemp("", "flashcore-"+name+"-")
	if err != nil {
		return "", err
	}
	core, err := fs.Sub(coreScripts, "python")
	if err == nil {
		err = copyPython(dir, core, nil)
	}
	if err == nil && plugin != nil {
		err = copyPython(dir, plugin, core)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("write worker scripts: %w", err)
	}
	return dir, nil
}

// copyPython copies every *.py file at the root of src into dir, refusing
// names that exist in reserved.
func copyPython(dir string, src, reserved fs.FS) error {
	names, err := fs.Glob(src, "*.py")
	if err != nil {
		return err
	}
	for _, name := range names {
		if reserved != nil {
			if _, err := fs.Stat(reserved, name); err == nil {
				return fmt.Errorf("plugin script %s shadows the bridge's own", name)
			}
		}
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(name)), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
