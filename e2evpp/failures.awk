# failures.awk reads the output of `go test -v` and prints, for each test
# that failed, what it logged, so that the reasons follow the table at the
# end of a long run (make e2e-vpp prints them when the suite fails). A
# message is the line "    <file>.go:<line>: ..." and the more-indented
# lines after it; "=== RUN/CONT/NAME" tells whose it is.
/^=== (RUN|CONT|NAME) / { cur = $3; last = ""; next }
/^ *--- FAIL: / { failed[++n] = $3; last = ""; next }
/^    [A-Za-z0-9_]+\.go:[0-9]+: / { said[cur] = said[cur] $0 "\n"; lines[cur]++; last = cur; next }
/^        / && last != "" {
	if (lines[last]++ < 40) said[last] = said[last] $0 "\n"
	next
}
{ last = "" }
END {
	if (n == 0) exit
	print "\nWhat the failed tests logged:"
	for (i = n; i >= 1; i--) {
		t = failed[i]
		if (said[t] == "" || shown[t]++) continue
		printf "--- FAIL: %s\n%s", t, said[t]
	}
}
