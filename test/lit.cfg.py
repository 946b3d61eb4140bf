# -*- Python -*-
# lit configuration for harp's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "HARP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py", ".c"]
# Integration/ and python/ are pytest suites, run by scripts/run-tests.sh
# next to lit.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs",
                   "Integration", "python"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.harp_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%harp_src_root", config.harp_src_root))
config.substitutions.append(("%harp_obj_root", config.harp_obj_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.harp_tools_dir, config.llvm_tools_dir]
tools = ["harp-opt", "harp-run", "harp-capi-test"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.harp_tools_dir, append_path=True)
