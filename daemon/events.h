/* The event stream behind GET /api/v1/events (server-sent events): a bounded ring of the
 * recent events, each already rendered as an SSE record, and a wake-up for the readers.
 *
 * An event id is "EPOCH-SEQ": EPOCH names this run of rocefabd (its start, µs since 1970, in
 * hex) and SEQ counts from 1.  A reader that comes back with the id it last saw (the
 * Last-Event-ID header) gets every event after it while the ring still holds them; an id of
 * another run, or one the ring has overwritten, gets -ESTALE: the reader must reload what it
 * shows (the stream then says "reset").  Thread-safe. */
#ifndef ROCEFAB_EVENTS_H
#define ROCEFAB_EVENTS_H

#include <stdint.h>

#include <jansson.h>

#include "lib/buf.h"

struct events;

/* cap: events kept for resuming (at least 16). */
int events_new(unsigned cap, struct events **ret);
void events_free(struct events *ev);

/* Appends an event of type (a word: "alert", "change", "proposal") with data (an object,
 * rendered compact on one line); returns its sequence number, 0 when out of memory. */
uint64_t events_publish(struct events *ev, const char *type, json_t *data_stolen);
/* Called after each publish, outside the ring's lock (the API resumes its streams).  Returns
 * once no call of the previous function is running: its context may then be freed. */
void events_set_wake(struct events *ev, void (*fn)(void *ctx), void *ctx);
/* The id of event seq ("EPOCH-SEQ"), as snprintf. */
int events_format_id(struct events *ev, uint64_t seq, char *buf, size_t len);

/* The sequence number of the newest event (0: none yet). */
uint64_t events_last(struct events *ev);
/* Parses a Last-Event-ID: its sequence number in *ret, or -ESTALE (another run, malformed, or
 * older than the ring holds). */
int events_parse_id(struct events *ev, const char *id, uint64_t *ret);
/* Appends to out the SSE records of the events after seq `after`, up to max_bytes (at least one
 * event), and sets *ret_last to the last one appended.  0 when there is nothing newer, 1 when
 * records were appended, -ESTALE when events after `after` were already overwritten. */
int events_since(struct events *ev, uint64_t after, size_t max_bytes, struct buf *out,
		 uint64_t *ret_last);

#endif
