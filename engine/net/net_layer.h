// Layer guard, included by every header under engine/net/ and engine/trace/stream/: sockets, tokens and the trace
// stream build into shardscope_net, not the core, so the core (and anything that links only the core) fails to
// compile here when it includes them. SHARDSCOPE_LAYER_NET is a PUBLIC compile definition of shardscope_net: only
// its users see it.
#pragma once

#ifndef SHARDSCOPE_LAYER_NET
#error "layer rule: only targets linking shardscope_net may include engine/net/ or engine/trace/stream/"
#endif
