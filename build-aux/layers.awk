# Checks one object's includes against the layers (see the Makefile's LAYERS and
# docs/architecture.md).  Input: the compiler's dependency file (-MMD -MP) of the object.
# Variables: src (the source file), layer (its directory), uses (the layers it may use).
# Exits 1, naming each include that runs against the layers, when there is one.
BEGIN {
	allowed[layer] = 1
	n = split(uses, u, " ")
	for (i = 1; i <= n; i++)
		allowed[u[i]] = 1
	bad = 0
	others = uses
	gsub(/ +/, ", ", others)
}
{
	for (i = 1; i <= NF; i++) {
		f = $i
		if (f == "\\" || f ~ /:$/ || f ~ /^\//)
			continue
		sub(/^\.\//, "", f)
		if (f == src || f !~ /\//)
			continue
		dir = f
		sub(/\/[^\/]*$/, "", dir)
		if (dir in allowed || seen[f]++)
			continue
		printf("%s: includes %s, but %s/ may use only %s (layers: docs/architecture.md)\n",
		       src, f, layer, uses == "" ? "itself" : "itself, " others) > "/dev/stderr"
		bad = 1
	}
}
END {
	exit bad
}
