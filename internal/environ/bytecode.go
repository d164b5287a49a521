package environ

import "path/filepath"

// PythonBytecodeCache is what a Python process's environment needs so that
// Python keeps the compiled bytecode of what it imports (torch's hundreds
// of modules) where PYTHONDONTWRITEBYTECODE forbids writing it beside the
// sources: in cacheDir/pycache, through PYTHONPYCACHEPREFIX, never beside
// the sources, which is what the variable is for. Without it every process
// compiles torch's Python at every start: on an H100 machine whose image
// sets the variable, import torch took 3.1–4.9 s and torch.profiler's
// first session 4.1–4.2 s, against 1.2–1.4 s and 1.2 s with the bytecode
// kept. It returns the variables to add to env (the last of a duplicated
// key wins), or nil where env lets Python write its bytecode, where the
// user set a PYTHONPYCACHEPREFIX (theirs wins), or where there is no
// cacheDir.
func PythonBytecodeCache(env []string, cacheDir string) []string {
	if Value(env, "PYTHONDONTWRITEBYTECODE") == "" || Value(env, "PYTHONPYCACHEPREFIX") != "" || cacheDir == "" {
		return nil
	}
	return []string{"PYTHONDONTWRITEBYTECODE=", "PYTHONPYCACHEPREFIX=" + filepath.Join(cacheDir, "pycache")}
}
