def greet(name):
    return "Hello, " + name + "!"


def shout(name):
    return greet(name).upper()


print(greet("world"))
print(shout("stepwise"))
