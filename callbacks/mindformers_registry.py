"""``TrainMonitor`` in mindformers' class registry, so that a YAML ``callbacks:`` entry ``type: TrainMonitor`` builds it.

Importing ``tb_mindspore_callbacks`` never imports mindformers (importing it takes seconds and creates an ``output``
folder in the working directory) nor MindSpore: when mindformers' registry is already imported, ``TrainMonitor`` is registered
at once; when mindformers is installed but not imported yet, it is registered right after its registry module is
(a one-shot import hook, removed once it has run); without mindformers nothing happens.
"""

import importlib.abc
import importlib.util
import sys

__all__ = ["REGISTRY_MODULE", "register", "register_when_imported"]

REGISTRY_MODULE = "mindformers.tools.register.register"


def register(module=None):
    """Registers ``TrainMonitor`` as a mindformers callback (``module``: mindformers' registry module, default the
    imported one). Returns True when it is (or already was) registered."""
    from .monitor import TrainMonitor   # lazy: MindSpore is imported only with mindformers (which imports it anyway)

    module = module if module is not None else sys.modules.get(REGISTRY_MODULE)
    if module is None:
        return False
    registry, types = module.MindFormerRegister, module.MindFormerModuleType
    if registry.registry.get(types.CALLBACK, {}).get("TrainMonitor") is not TrainMonitor:
        registry.register_cls(TrainMonitor, module_type=types.CALLBACK)
    return True


class _Loader(importlib.abc.Loader):
    """mindformers' own loader of its registry module, then :func:`register`."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            register(module)
        except Exception:           # never break mindformers' import
            pass


class _AfterRegistryImport(importlib.abc.MetaPathFinder):
    """Finds mindformers' registry module with the other finders and wraps its loader (once)."""

    def find_spec(self, name, path=None, target=None):
        if name != REGISTRY_MODULE:
            return None
        _remove_hook()
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


_HOOK = []


def _remove_hook():
    for hook in _HOOK:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
    del _HOOK[:]


def register_when_imported():
    """Registers now when mindformers' registry is imported, else once it is (when mindformers is installed)."""
    if REGISTRY_MODULE in sys.modules:
        return register()
    if _HOOK:
        return False
    try:
        installed = importlib.util.find_spec("mindformers") is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        hook = _AfterRegistryImport()
        _HOOK.append(hook)
        sys.meta_path.insert(0, hook)
    return False
