// Layer guard, included by every header under engine/exec/: the build enforces "app -> sim -> engine core", so
// the core, sim/ and the GUI's panels fail to compile here (not at some later link) when they include an executor
// header. SHARDSCOPE_LAYER_EXEC is a PUBLIC compile definition of shardscope_exec: only its users see it.
#pragma once

#ifndef SHARDSCOPE_LAYER_EXEC
#error "layer rule: only targets linking shardscope_exec may include engine/exec/ (not the core, sim/ or GUI panels)"
#endif
