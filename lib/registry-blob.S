/* The counter registry, built into every binary (see lib/registry.c reg_load_builtin). */
	.section .rodata
	.global reg_builtin_json
	.global reg_builtin_json_end
	.type reg_builtin_json, @object
reg_builtin_json:
	.incbin "schemas/counters.json"
reg_builtin_json_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
