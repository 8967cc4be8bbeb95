// Command hello is the small program the image tests put in an image: it
// answers -h as the real programs do.
package main

import (
	"flag"
	"fmt"
)

func main() {
	greet := flag.String("greet", "world", "who to greet")
	flag.Parse()
	fmt.Println("hello,", *greet)
}
