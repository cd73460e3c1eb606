# The README's two commands. Both do their own set-up on a fresh machine.
.PHONY: demo test
demo:
	bash deploy/dev.sh demo
test:
	bash deploy/dev.sh test
