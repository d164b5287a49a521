"""triton.autotune under Triton's CPU interpreter: one configuration, no timing.

Where to start: ``install()``. The python-file backend calls it before it
imports a user's file, when TRITON_INTERPRET=1 (no GPU here). Triton's
autotuner times every configuration with the active driver's benchmarker,
and under the interpreter there is no driver: the first autotuned call fails
with "RuntimeError: 0 active drivers ([]). There should only be one."
``install`` replaces ``triton.autotune`` (and the same function under
``triton.runtime`` and ``triton.runtime.autotuner``) with one that builds an
``InterpreterAutotuner``: Triton's own Autotuner, whose ``run`` launches one
configuration and benchmarks none. The configuration is

1. the one the kernel's module names with ``FLASHCORE_INTERPRETER_CONFIG``,
   read at the first call, so after the file's import: an index into the
   kernel's configs (``2``), or meta-parameters that a config must have
   (``{"BLOCK_M": 32}``: the first config whose kwargs include them);
2. else the first configuration (of those ``prune_configs_by``'s
   ``early_config_prune`` keeps, when it has one).

That configuration is launched as the autotuner launches the one it chose:
its kwargs, num_warps and num_stages go to the kernel as meta-parameters,
and its ``pre_hook`` runs first. ``key``, ``reset_to_zero``,
``restore_value``, ``perf_model`` and the other keywords are accepted and
stored by Triton's Autotuner; with nothing benchmarked they have nothing to
do. On a GPU ``install`` is never called and the real autotuner runs.
"""

import os

CONFIG_VARIABLE = "FLASHCORE_INTERPRETER_CONFIG"


def interpreting():
    """Whether triton.jit will run kernels under the interpreter."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def install():
    """Makes triton.autotune pick one configuration without timing. Returns
    False where triton cannot be imported (a file that does not use it)."""
    try:
        import triton
        import triton.runtime
        import triton.runtime.autotuner as autotuner
    except ImportError:
        return False
    tuner = interpreter_autotuner_class(autotuner.Autotuner)

    def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False):
        def decorator(fn):
            return tuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

        return decorator

    autotune.__doc__ = f"triton.autotune under the interpreter: one configuration, no timing ({__name__})."
    for module in (triton, triton.runtime, autotuner):
        module.autotune = autotune
    return True


def interpreter_autotuner_class(base):
    """The Autotuner subclass for Triton's Autotuner class ``base``."""

    class InterpreterAutotuner(base):
        """Triton's Autotuner that launches one configuration per call and
        benchmarks none (``flashcore_triton_interpreter``'s doc says which)."""

        def run(self, *args, **kwargs):
            self.nargs = dict(zip(self.arg_names, args))
            chosen = self.interpreter_config(kwargs)
            # With one configuration Triton's own run launches it as it
            # launches the one it chose, pre_hook included, and times nothing.
            configs, self.configs = self.configs, [chosen]
            try:
                return super().run(*args, **kwargs)
            finally:
                self.configs = configs

        def interpreter_config(self, kwargs):
            named = getattr(self.base_fn, "__globals__", {}).get(CONFIG_VARIABLE)
            if named is not None:
                return pick_named(self.configs, named, self.base_fn.__name__)
            configs = self.configs
            if self.early_config_prune:
                configs = self.early_config_prune(self.configs, self.nargs, **kwargs) or configs
            return configs[0]

    return InterpreterAutotuner


def pick_named(configs, named, kernel):
    """The config FLASHCORE_INTERPRETER_CONFIG names: an index, or a dict of
    meta-parameters the config's kwargs must hold."""
    if isinstance(named, int) and not isinstance(named, bool):
        if -len(configs) <= named < len(configs):
            return configs[named]
        raise ValueError(f"{CONFIG_VARIABLE} = {named}: {kernel} has {len(configs)} autotune configs "
                         f"(index 0 to {len(configs) - 1})")
    if isinstance(named, dict):
        for config in configs:
            if all(config.kwargs.get(name) == value for name, value in named.items()):
                return config
        listed = "; ".join(str(config.kwargs) for config in configs)
        raise ValueError(f"{CONFIG_VARIABLE} = {named}: no autotune config of {kernel} has these values "
                         f"(its configs: {listed})")
    raise TypeError(f"{CONFIG_VARIABLE} is a {type(named).__name__}: want an index into the autotune configs "
                    f"or a dict of meta-parameters such as {{'BLOCK_M': 32}}")
