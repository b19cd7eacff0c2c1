/* cmd-push.c — placeholder while being written. */
#include "cli.h"
