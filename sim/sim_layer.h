// Layer guard, included by every header under sim/: the build enforces "app -> sim -> engine", so code in engine/
// fails to compile here when it includes a simulator header. SHARDSCOPE_LAYER_SIM is a PUBLIC compile definition of
// shardscope_sim: only its users see it.
#pragma once

#ifndef SHARDSCOPE_LAYER_SIM
#error "layer rule: sim/ headers are only for targets that link shardscope_sim; engine/ must not include the simulator"
#endif
