/* Probe statistics and names: see probe.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agents/probe/probe.h"
#include "lib/vec.h"

static const char *const err_names[] = { "timeout",	"rnr_retry_exceeded", "retry_exceeded",
					 "remote_access", "remote_op",	      "local",
					 "flushed",	"other" };

const char *probe_err_name(enum probe_err e)
{
	return e < PE_NERRS ? err_names[e] : "?";
}

void probe_stats_compute(double *samples, size_t nsamples, uint64_t attempts,
			 struct probe_stats *ret)
{
	double sum = 0, sq = 0;
	uint64_t errs[PE_NERRS], data = ret->data_errors;
	double cpu = ret->cpu_us_per_op;

	memcpy(errs, ret->errors, sizeof(errs));
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->errors, errs, sizeof(errs));
	ret->data_errors = data;
	ret->cpu_us_per_op = cpu;
	ret->n = attempts;
	ret->ok = nsamples;
	ret->lost = attempts > nsamples ? attempts - nsamples : 0;
	if (!nsamples)
		return;
	qsort(samples, nsamples, sizeof(*samples), vec_cmp_double);
	for (size_t i = 0; i < nsamples; i++)
		sum += samples[i];
	ret->mean = sum / (double)nsamples;
	for (size_t i = 0; i < nsamples; i++)
		sq += (samples[i] - ret->mean) * (samples[i] - ret->mean);
	ret->stdev = nsamples > 1 ? sqrt(sq / (double)(nsamples - 1)) : 0;
	ret->min = samples[0];
	ret->max = samples[nsamples - 1];
	ret->p50 = vec_percentile(samples, nsamples, 50);
	ret->p99 = vec_percentile(samples, nsamples, 99);
	ret->p999 = vec_percentile(samples, nsamples, 99.9);
}

static double r3(double v)
{
	return round(v * 1000) / 1000;
}

json_t *probe_stats_json(const struct probe_stats *st)
{
	json_t *errs = json_object();

	for (int i = 0; i < PE_NERRS; i++)
		json_object_set_new(errs, err_names[i], json_integer((json_int_t)st->errors[i]));
	return json_pack("{s:I,s:I,s:I,s:I,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "n",
			 (json_int_t)st->n, "ok", (json_int_t)st->ok, "lost", (json_int_t)st->lost,
			 "data_errors", (json_int_t)st->data_errors, "errors", errs, "min_us",
			 r3(st->min), "p50_us", r3(st->p50), "mean_us", r3(st->mean), "stdev_us",
			 r3(st->stdev), "p99_us", r3(st->p99), "p999_us", r3(st->p999), "max_us",
			 r3(st->max), "cpu_us_per_op", r3(st->cpu_us_per_op));
}
