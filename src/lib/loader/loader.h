/* loader.h — what the loader tells the mixer about itself, inside the library. */
#ifndef MT_LOADER_H
#define MT_LOADER_H

#include "util.h"

/* Batches this rank has still to take this epoch. */
MT_LOCAL uint64_t mti_loader_batches_left(const mt_loader *l);
/* The epoch the loader is in. */
MT_LOCAL uint64_t mti_loader_epoch(const mt_loader *l);
/* Windows of the next epoch read ahead and ready (for tests). */
MT_LOCAL int mti_loader_ahead_ready(mt_loader *l);
/* Fillers waiting, for their slot to be handed out (having read ahead for
 * the window they fill next) or for the loader to move on (for tests). */
MT_LOCAL int mti_loader_fillers_idle(mt_loader *l);
/* Window buffers let go with batches of theirs still held (for tests). */
MT_LOCAL int mti_loader_orphans(mt_loader *l);

#endif
