/* cmd-sync.c — placeholder while being written. */
#include "cli.h"
