# -*- Python -*-
# The main lit configuration of the TGC lit suite. The site config generated
# by CMake (build/test/lit/lit.site.cfg.py) sets the paths and loads this file.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TGC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)

# Every .mlir and .test file below this directory is a test, in any subfolder
# (Dialect/tg, Frontend, ...); a folder named Inputs holds their inputs.
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "README.md", "README.txt",
                   "lit.cfg.py", "lit.site.cfg.py"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = getattr(config, "tgc_lit_obj_root",
                                os.path.join(config.tgc_obj_root, "test", "lit"))

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%tgc_src_root", config.tgc_src_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# FileCheck, not, count and split-file come from the LLVM install; the TGC
# tools from the build tree.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.tgc_tools_dir, append_path=True)

tool_dirs = [config.tgc_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("tg-opt", unresolved="fatal"),
    # Not built yet in every tree: substituted when present.
    ToolSubst("tgc", unresolved="ignore"),
    ToolSubst("tg-eval", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Lets a test say `REQUIRES: tgc` / `REQUIRES: tg-eval`.
for name in ("tgc", "tg-eval"):
    if os.path.exists(os.path.join(config.tgc_tools_dir, name)):
        config.available_features.add(name)
