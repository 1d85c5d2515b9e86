/*
** runtime_entries.c: what libdnsshim_ares's runtime
** (libdnsshim_ares_runtime.so.1, csrc/ares/front.c) exports: the bridge's
** four calls, in one table, the object's one name
** (libdnsshim_ares_runtime.map).  Linked into the runtime alone: the
** bridge's calls stay hidden in every unit, so the static archive and the
** worker image are compiled as before, and the runtime's other names stay
** its own.
*/
#include "ares/dnsshim_ares_internal.h"

__attribute__((visibility("default")))
const dnsshim_ares__entries dnsshim_ares__runtime_entries = {
    sizeof(dnsshim_ares__entries),
    dnsshim_ares__compute,
    dnsshim_ares__done,
    dnsshim_ares__message,
    dnsshim_ares__message_done,
};
