class _Versioner:
    def __init__(self):
        self.entries = {}


JIT_EXTENSION_VERSIONER = _Versioner()


def load_inline(name, *args, **kwargs):
    raise RuntimeError("Error building extension '%s': no compilers in the stand-in" % name)


load = load_inline


def _import_module_from_library(name, path, is_python_module):
    raise ImportError(name)
