/* streams.h — in-order task queues on threads, and events between them (the
 * CPU backend's model of CUDA streams and events; DESIGN §8).
 *
 * A stream is one worker thread draining a FIFO of tasks in order. An event is
 * a counter: rt_stream_record enqueues "mark the event reached"; rt_stream_wait
 * enqueues "block this stream until the event's most recent record (at the time
 * of the wait call) has been reached". Both use one mutex + condvar per event.
 *
 *   rt_stream *s = rt_stream_new("compute"), *c = rt_stream_new("h2d");
 *   rt_event *e = rt_event_new();
 *   rt_stream_push(c, copy_fn, ctx, 0);     // task runs on c's thread
 *   rt_stream_record(c, e);
 *   rt_stream_wait(s, e);                   // s's later tasks run after copy_fn
 *   rt_stream_push(s, use_fn, ctx, 0);
 *   if (rt_stream_sync(s, &err)) ...        // waits until s is drained; first error
 *   rt_stream_free(s); rt_stream_free(c); rt_event_free(e);
 *
 * Errors: a task returning OC_ERR stores its message in the stream; later plain
 * tasks of that stream are skipped (records and waits still run, so no other
 * stream deadlocks), and rt_stream_sync returns the first error, then clears it.
 * Recording and waiting from several host threads on one stream is not
 * supported: one host thread drives all streams (the executor). */
#ifndef OC_STREAMS_H
#define OC_STREAMS_H

#include "ir/common.h"

/* A task: runs on the stream's thread with (ctx, arg). */
typedef int (*rt_task_fn)(void *ctx, int64_t arg, oc_err *err);

typedef struct rt_stream rt_stream;
typedef struct rt_event rt_event;

/* Starts the worker thread. name is copied (messages). Aborts if no thread. */
rt_stream *rt_stream_new(const char *name);
/* Drains the queue, stops and joins the thread. */
void rt_stream_free(rt_stream *s);

void rt_stream_push(rt_stream *s, rt_task_fn fn, void *ctx, int64_t arg);
void rt_stream_record(rt_stream *s, rt_event *e);
void rt_stream_wait(rt_stream *s, rt_event *e);
/* Blocks until every task pushed so far has run. Returns the first error
 * (message prefixed with the stream name) since the last sync, or OC_OK. */
int rt_stream_sync(rt_stream *s, oc_err *err);

rt_event *rt_event_new(void);
void rt_event_free(rt_event *e);
/* True when every record enqueued so far has been reached. */
bool rt_event_query(rt_event *e);

#endif
