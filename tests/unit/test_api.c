/* Unit tests of the API's pure parts: errno -> HTTP status, problem details,
 * and role checks. */
#include <string.h>

#include "api/internal.h"
#include "api/problem.h"
#include "daemon/tokens.h"
#include "tests/unit/unit.h"

static void test_status_mapping(void **state)
{
	(void)state;
	assert_int_equal(api_status_from_errno(-EINVAL), 400);
	assert_int_equal(api_status_from_errno(-EPERM), 401);
	assert_int_equal(api_status_from_errno(-EACCES), 403);
	assert_int_equal(api_status_from_errno(-ENOENT), 404);
	assert_int_equal(api_status_from_errno(-EOPNOTSUPP), 405);
	assert_int_equal(api_status_from_errno(-EEXIST), 409);
	assert_int_equal(api_status_from_errno(-E2BIG), 413);
	assert_int_equal(api_status_from_errno(-EMEDIUMTYPE), 415);
	assert_int_equal(api_status_from_errno(-EAGAIN), 503);
	assert_int_equal(api_status_from_errno(-ENOSPC), 507);
	assert_int_equal(api_status_from_errno(-EIO), 500);
	assert_int_equal(api_status_from_errno(EINVAL), 400); /* either sign */
}

static void test_problem(void **state)
{
	struct rf_err e;
	json_t *p;

	(void)state;
	rf_err_set(&e, -EINVAL, "BAD_THRESHOLD_ORDER", "/kmin_bytes", "Kmin must be below Kmax");
	p = problem_new(400, &e, "/api/v1/x");
	assert_string_equal(json_string_value(json_object_get(p, "type")),
			    "urn:rocefab:problem:bad-threshold-order");
	assert_string_equal(json_string_value(json_object_get(p, "code")), "BAD_THRESHOLD_ORDER");
	assert_string_equal(json_string_value(json_object_get(p, "title")), "Bad Request");
	assert_int_equal(json_integer_value(json_object_get(p, "status")), 400);
	assert_string_equal(json_string_value(json_object_get(p, "pointer")), "/kmin_bytes");
	assert_string_equal(json_string_value(json_object_get(p, "detail")), "Kmin must be below Kmax");
	json_decref(p);
	/* no code: derived from the status */
	p = problem_new(404, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(p, "code")), "NOT_FOUND");
	assert_null(json_object_get(p, "pointer"));
	json_decref(p);
}

static void test_roles(void **state)
{
	enum role r;

	(void)state;
	assert_true(role_allows(ROLE_VIEWER, ROLE_VIEWER));
	assert_true(role_allows(ROLE_OPERATOR, ROLE_VIEWER));
	assert_true(role_allows(ROLE_ADMIN, ROLE_OPERATOR));
	assert_true(role_allows(ROLE_ADMIN, ROLE_AGENT));
	assert_true(role_allows(ROLE_AGENT, ROLE_AGENT));
	assert_false(role_allows(ROLE_VIEWER, ROLE_AGENT)); /* a viewer cannot post reports */
	assert_false(role_allows(ROLE_AGENT, ROLE_VIEWER)); /* an agent cannot read */
	assert_false(role_allows(ROLE_VIEWER, ROLE_OPERATOR));
	assert_false(role_allows(ROLE_OPERATOR, ROLE_ADMIN));
	assert_false(role_allows(ROLE_NONE, ROLE_VIEWER));
	assert_true(role_allows(ROLE_NONE, ROLE_NONE));
	assert_int_equal(role_parse("operator", &r), 0);
	assert_int_equal(r, ROLE_OPERATOR);
	assert_int_equal(role_parse("root", &r), -EINVAL);
	assert_int_equal(role_parse("none", &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_mapping),
		cmocka_unit_test(test_problem),
		cmocka_unit_test(test_roles),
	};

	return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
